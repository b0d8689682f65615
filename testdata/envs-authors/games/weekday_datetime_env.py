# skill: math
# Imports datetime, which the authors' loader lets a program import.
import datetime
import random
import re


class WeekdayDatetimeEnv:
    """Say on which weekday a date falls."""

    DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

    def __init__(self, max_turns=3):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        start = datetime.date(2000, 1, 1)
        self.date = start + datetime.timedelta(days=rng.randint(0, 9000))
        self.turn = 0
        return "On which weekday was %s? Answer as \\boxed{day}." % self.date.isoformat(), {"year": self.date.year}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        guess = m.group(1).strip().lower() if m else ""
        if guess == self.DAYS[self.date.weekday()]:
            return "Right.", 1.0, True, False, {"success": True}
        done = self.turn >= self.max_turns
        return "No.", 0.0, False, done, {}
