# skill: spatial reasoning
# The same broken f-string as grid_fstring_env.py, but on the line that also returns the info {}: the brace repair doubles that too, into {{}}, a set holding a dict, which raises in reset.
import random
import re


class FstringDictEnv:
    """Find the hidden cell of a 4x4 grid."""

    def __init__(self, max_turns=8):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.cell = (rng.randint(0, 3), rng.randint(0, 3))
        self.turn = 0
        return f"A 4x4 grid hides one cell. Guess it as \\boxed{row col}, rows and columns 0-3. You have {self.max_turns} guesses.", {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{\s*(\d)\s+(\d)\s*\}", action)
        if m and (int(m.group(1)), int(m.group(2))) == self.cell:
            return "Found it.", 1.0, True, False, {"success": True}
        hint = "Malformed guess."
        if m:
            r, c = int(m.group(1)), int(m.group(2))
            hint = f"Distance {abs(r - self.cell[0]) + abs(c - self.cell[1])}."
        return hint, 0.0, False, self.turn >= self.max_turns, {}
