# skill: logical reasoning
# Reaches the interpreter's internals through operator.methodcaller with a dunder method named at run time, while it loads.
import operator
import random
import re

NAME = "".join(["_", "_", "reduce_ex", "_", "_"])
STATE = operator.methodcaller(NAME, 2)(random.Random(1))


class MethodcallerDunderEnv:
    def __init__(self, max_turns=2):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(1, 9)
        return "Say %d as \\boxed{n}." % self.n, {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.n)
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), True, False, {}
