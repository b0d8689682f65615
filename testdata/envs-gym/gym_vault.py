# skill: logical_deduction
# setting: games
# ends: env_truncated
import random
import re


class VaultEnv:
    """Open a vault by its three-letter code; the vault locks for good after four wrong tries."""

    TRIES = 4

    def __init__(self, max_turns=25, **kwargs):
        self.max_turns = max_turns
        self.code, self.tries = "", 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.code = "".join(rng.choice("ABC") for _ in range(3))
        self.tries = 0
        return ("The vault's code is three letters from A, B and C. Answer as \\boxed{ABC}; each try tells how "
                "many letters are in the right place. The vault allows %d tries." % self.TRIES), {"tries": self.TRIES}

    def step(self, action):
        self.tries += 1
        m = re.search(r"\\boxed\{(.+?)\}", action)
        guess = (m.group(1) if m else action).strip().upper()
        if guess == self.code:
            return "The vault opens.", 1.0, True, False, {"success": True}
        right = sum(1 for a, b in zip(guess, self.code) if a == b)
        if self.tries >= min(self.TRIES, self.max_turns):
            return "%d in place. Out of tries: the vault stays shut." % right, 0.0, False, True, {"success": False}
        return "%d in place. Try again." % right, 0.1 * right / 3, False, False, {}

    def solution(self):
        return "\\boxed{%s}" % self.code

    def close(self):
        self.code = ""
