# skill: math
# The class is named Puzzle: the authors' loader looks for a class whose name ends in Env.
import random
import re


class Puzzle:
    def __init__(self, max_turns=4):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(2, 12)
        self.turn = 0
        return "What is %d times 7? Answer as \\boxed{n}." % self.n, {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.n * 7)
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), ok, self.turn >= self.max_turns, {}
