# skill: math
# Pays 25 for a wrong answer's effort: outside the authors' range [-10, 10].
import random
import re


class BigRewardEnv:
    def __init__(self, max_turns=5):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.target = random.Random(seed).randint(100, 999)
        self.turn = 0
        return "Guess the three-digit number as \\boxed{n}.", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.target)
        return ("Yes." if ok else "Keep trying."), (100.0 if ok else 25.0), ok, self.turn >= self.max_turns, {}
