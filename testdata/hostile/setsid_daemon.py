# attack: a setsid daemon that escapes the process-group kill, holds the pipes and keeps trying
# expect: timeout|protocol|crash
import os
import socket
import time


class Daemon:
    def reset(self, seed):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                for _ in range(600):
                    try:
                        socket.create_connection(("127.0.0.1", @PORT@), timeout=1).sendall(b"daemon")
                    except OSError:
                        pass
                    try:
                        with open("@OUTSIDE_DIR@/escaped.txt", "w") as f:
                            f.write("daemon")
                    except OSError:
                        pass
                    time.sleep(0.1)
            os._exit(0)
        while True:
            time.sleep(1)

    def step(self, action):
        return "x", 0.0, True, {}
