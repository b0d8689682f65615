# attack: sleep past the deadline
# expect: timeout
import time


class Sleeper:
    def reset(self, seed):
        return "start"

    def step(self, action):
        time.sleep(3600)
        return "x", 0.0, False, {}
