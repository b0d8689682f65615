# skill: strategic planning
# Every step ends the episode, with a reward of exactly -10 or 10: the edges of the authors' range.
import random
import re


class EdgeRewardEnv:
    """Call the coin once."""

    def __init__(self, max_turns=1):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.side = random.Random(seed).choice(["heads", "tails"])
        return "Call the coin: \\boxed{heads} or \\boxed{tails}.", {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip().lower() == self.side
        return "It was %s." % self.side, (10 if ok else -10), True, False, {"success": ok}
