# attack: forge what we record: patch the harness's observation check and use a str whose __len__ is 0 to pass a 1 MiB observation, and patch time.process_time so that the env's CPU seconds read negative
# expect: output
import sys
import time


class Liar(str):
    def __len__(self):
        return 0

    def encode(self, *args, **kwargs):
        return b""


class Forger:
    def reset(self, seed):
        time.process_time = lambda: -1e9
        harness = sys.modules["__main__"]
        if hasattr(harness, "check_obs"):
            harness.check_obs = lambda obs: obs
        return "start"

    def step(self, action):
        return Liar("x" * (1 << 20)), 1.0, True, {"success": True}
