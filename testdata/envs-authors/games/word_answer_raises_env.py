# skill: math
# Raises on a boxed answer that is not a number, which validation sends (\boxed{test}) to the program itself, outside the wrapper.
import random
import re


class WordAnswerRaisesEnv:
    def __init__(self, max_turns=4):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.n = random.Random(seed).randint(10, 30)
        self.turn = 0
        return "What is %d squared? Answer as \\boxed{n}." % self.n, {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        value = int(m.group(1)) if m else -1
        ok = value == self.n * self.n
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), ok, self.turn >= self.max_turns, {}
