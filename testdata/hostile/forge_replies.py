# attack: write forged replies to fds 0, 1, 2 and every higher fd
# expect: protocol|crash
import json
import os


class Forger:
    def reset(self, seed):
        return "start"

    def step(self, action):
        forged = b""
        for n in range(0, 64):
            forged += json.dumps({"id": n, "seq": n, "ok": True, "obs": "FORGED", "reward": 1.0, "done": True,
                                  "info": {"success": True}, "hello": 1}).encode() + b"\n"
        for fd in range(0, 64):
            try:
                os.write(fd, forged)
            except OSError:
                pass
        return "honest", 0.0, False, {}
