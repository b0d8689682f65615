# attack: fork bomb
# expect: BlockingIOError|Resource temporarily unavailable|protocol|crash|timeout
import os


class ForkBomb:
    def reset(self, seed):
        return "start"

    def step(self, action):
        while True:
            os.fork()
