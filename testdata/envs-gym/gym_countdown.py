# skill: math_reasoning
# setting: games
# ends: env_truncated
import random
import re
from typing import Dict, Tuple


class CountdownEnv:
    """Find a hidden number from higher/lower answers within the turn budget."""

    def __init__(self, max_turns=12, **kwargs):
        self.max_turns = max_turns
        self.secret, self.turn = 0, 0

    def reset(self, seed=None) -> Tuple[str, Dict]:
        rng = random.Random(seed)
        self.secret, self.turn = rng.randint(1, 30), 0
        return ("A number between 1 and 30 is hidden. Guess it as \\boxed{N}; each answer says higher or "
                "lower. You have %d guesses." % self.max_turns), {}

    def step(self, action: str) -> Tuple[str, float, bool, bool, Dict]:
        self.turn += 1
        out_of_turns = self.turn >= self.max_turns
        m = re.search(r"\\boxed\{(.+?)\}", action)
        text = (m.group(1) if m else action).strip()
        if not text.isdigit():
            return "Answer with a whole number as \\boxed{N}.", 0.0, False, out_of_turns, {}
        guess = int(text)
        if guess == self.secret:
            return "Found it.", 1.0, True, False, {"success": True}
        hint = "higher" if guess < self.secret else "lower"
        return "No: %s. Guess again as \\boxed{N}." % hint, 0.0, False, out_of_turns, {}

    def solution(self) -> str:
        return "\\boxed{%d}" % self.secret

    def close(self):
        pass
