# skill: logical reasoning
# step returns the old 4-tuple (observation, reward, done, info): the authors' loader wants the 5-tuple.
import random
import re


class FourTupleEnv:
    def __init__(self, max_turns=4):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.odd = random.Random(seed).choice(["odd", "even"])
        self.n = random.Random(seed).randrange(1 if self.odd == "odd" else 2, 100, 2)
        return "Is %d odd or even? Answer as \\boxed{odd} or \\boxed{even}." % self.n, {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip().lower() == self.odd
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), True, {"success": ok}
