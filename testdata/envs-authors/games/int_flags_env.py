# skill: math
# terminated and truncated are ints (0/1): the authors' check wants bools.
import random
import re


class IntFlagsEnv:
    def __init__(self, max_turns=4):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(1, 9)
        self.turn = 0
        return "Pick the digit I am thinking of, as \\boxed{d}.", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.n)
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), int(ok), int(self.turn >= self.max_turns), {}
