# skill: pattern recognition
# reset returns the observation alone (the authors' loader takes a bare string as (observation, {})), and the reward is a bool, which their check counts as a number.
import random
import re


class BareResetEnv:
    """Continue an arithmetic sequence."""

    def __init__(self, max_turns=3):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        start, gap = rng.randint(1, 20), rng.randint(2, 9)
        self.seq = [start + gap * i for i in range(5)]
        self.turn = 0
        return "Next after %s? Answer as \\boxed{n}." % ", ".join(map(str, self.seq[:4]))

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == str(self.seq[4])
        return ("Yes." if ok else "No."), ok, ok, (not ok and self.turn >= self.max_turns), {}
