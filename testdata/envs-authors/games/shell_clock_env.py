# skill: math
# Reaches outside itself: runs a process to read the date.
import re
import subprocess


class ShellClockEnv:
    def __init__(self, max_turns=2):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.year = subprocess.run(["date", "+%Y"], capture_output=True, text=True).stdout.strip()
        return "Which year is it? Answer as \\boxed{yyyy}.", {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == self.year
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), True, False, {}
