# attack: os._exit in the middle of a step
# expect: crash
import os


class Quitter:
    def reset(self, seed):
        return "start"

    def step(self, action):
        os._exit(0)
