# skill: math
# step returns the remaining count as an int observation: the authors' check wants a str.
import random
import re


class IntObservationEnv:
    def __init__(self, max_turns=5):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(1, 50)
        self.turn = 0
        return "Guess a number 1-50 as \\boxed{n}.", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.target)
        return self.max_turns - self.turn, (1.0 if ok else 0.0), ok, False, {}
