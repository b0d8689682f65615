# skill: logical reasoning
# Reaches the interpreter's internals through operator: attrgetter with a dunder name built at run time (the static check cannot see it; the confined operator refuses it).
import random
import re

UNDER = "_" * 2


class OperatorDunderEnv:
    def __init__(self, max_turns=2):
        self.max_turns = max_turns

    def reset(self, seed=None):
        reach = operator.attrgetter(UNDER + "class" + UNDER + "." + UNDER + "init" + UNDER + "." + UNDER + "globals" + UNDER)
        self.names = sorted(reach(self))[:3]
        self.n = random.Random(seed).randint(1, 9)
        return "Say %d as \\boxed{n}." % self.n, {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.n)
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), True, False, {}
