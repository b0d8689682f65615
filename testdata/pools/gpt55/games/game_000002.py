import random


class MinOfThreeEnv:
    """Name the smallest of three numbers; partial credit for the middle one."""

    def __init__(self, max_turns=2):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.values = rng.sample(range(10), 3)
        return "Which is the smallest: %s?" % ", ".join(map(str, self.values)), {}

    def step(self, action):
        ranked = sorted(self.values)
        answer = action.strip()
        if answer == str(ranked[0]):
            return "Smallest, yes.", 1.0, True, False, {"success": True}
        if answer == str(ranked[1]):
            return "Close: that is the middle one.", 0.5, True, False, {}
        return "No.", 0.0, True, False, {}
