# skill: causal_inference
# setting: games
# ends: env_truncated
import random
import re


class SwitchEnv:
    """Find which of three switches lights the lamp; reset returns a bare observation string."""

    def __init__(self, max_turns=6):
        self.max_turns = max_turns
        self.live, self.turn = 1, 0

    def reset(self, seed=None):
        self.live = random.Random(seed).randint(1, 3)
        self.turn = 0
        return "Three switches, one lamp. Flip one as \\boxed{1}, \\boxed{2} or \\boxed{3}."

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{(.+?)\}", action)
        if (m.group(1) if m else action).strip() == str(self.live):
            return "The lamp lights.", 1.0, True, False, {"success": True}
        return "Dark.", 0.0, False, self.turn >= self.max_turns, {}
