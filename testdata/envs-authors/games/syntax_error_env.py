# skill: math
# A missing colon: a syntax error that the f-string repair cannot fix.
import random
import re


class SyntaxErrorEnv:
    def __init__(self, max_turns=4)
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(2, 12)
        return "Double %d as \\boxed{n}." % self.n, {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.n * 2)
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), True, False, {}
