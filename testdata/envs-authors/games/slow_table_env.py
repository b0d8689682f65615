# skill: math
# Takes about 12 s to load (longer than spade's old 10 s load deadline, within the authors' 30 s and 60 s).
import random
import re
import time

time.sleep(12)
SQUARES = {n: n * n for n in range(1, 100)}


class SlowTableEnv:
    """Give the square root of a perfect square."""

    def __init__(self, max_turns=3):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.root = random.Random(seed).randint(2, 99)
        self.turn = 0
        return "Which number squared gives %d? Answer as \\boxed{n}." % SQUARES[self.root], {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.root)
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), ok, (not ok and self.turn >= self.max_turns), {}
