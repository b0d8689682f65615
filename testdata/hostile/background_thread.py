# attack: a background thread that keeps running after step returns and writes forged replies
# expect: protocol|crash
import os
import threading
import time


def haunt():
    while True:
        try:
            os.write(3, b'{"seq": 99, "ok": true, "obs": "FORGED", "reward": 1.0, "done": true}\n')
        except OSError:
            pass
        time.sleep(0.001)


class Haunted:
    def reset(self, seed):
        return "start"

    def step(self, action):
        threading.Thread(target=haunt, daemon=True).start()
        time.sleep(0.05)
        return "x", 0.0, False, {}
