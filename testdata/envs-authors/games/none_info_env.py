# skill: language
# reset returns (observation, None): the authors' loader wants a dict info.
import random
import re


class NoneInfoEnv:
    WORDS = ["apple", "river", "candle", "mirror"]

    def __init__(self, max_turns=4):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.word = random.Random(seed).choice(self.WORDS)
        self.turn = 0
        return "Spell '%s' backwards as \\boxed{word}." % self.word, None

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == self.word[::-1]
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), ok, self.turn >= self.max_turns, {}
