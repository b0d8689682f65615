# skill: math
# Raises on an action without a box: validation sends only boxed actions; the wrapper turns the raise in validate_game's plain steps into reward -1.
import random
import re


class StrictParserEnv:
    """Give the sum of two numbers."""

    def __init__(self, max_turns=4):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.a, self.b = rng.randint(10, 99), rng.randint(10, 99)
        self.turn = 0
        return "What is %d + %d? Answer as \\boxed{n}." % (self.a, self.b), {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        if m is None:
            raise ValueError("no boxed answer in %r" % action[:40])
        self.turn += 1
        ok = m.group(1).strip() == str(self.a + self.b)
        return ("Correct." if ok else "Wrong."), (1.0 if ok else 0.0), ok, (not ok and self.turn >= self.max_turns), {}
