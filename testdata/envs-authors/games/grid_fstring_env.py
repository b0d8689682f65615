# skill: spatial reasoning
# An f-string whose literal braces do not parse ({row col}): the authors' loader doubles them before it loads the program.
import random
import re


class GridFstringEnv:
    """Find the hidden cell of a 4x4 grid."""

    def __init__(self, max_turns=8):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.cell = (rng.randint(0, 3), rng.randint(0, 3))
        self.turn = 0
        text = f"A 4x4 grid hides one cell. Guess it as \\boxed{row col}, rows and columns 0-3. You have {self.max_turns} guesses."
        return text, {}

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
