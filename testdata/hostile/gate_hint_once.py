# attack: the number the hint gives away solves the env once per process (a module-level flag): a gate whose smoke probe (the hint) runs on the one instance every check shares uses it up there, so its hint_leak check passes; every rollout episode is a fresh process, where the hint leaks
# expect: hint leaks the answer
import random

_leaked = [False]


class HintOnce:
    def reset(self, seed):
        self.target = random.Random(seed).randint(100, 999)
        self.turns = 0
        return "Open the vault: guess its three-digit code; after each guess you learn whether it is higher or lower."

    def step(self, action):
        self.turns += 1
        guess = action.strip()
        solved = guess == str(self.target)
        if "417" in guess and not _leaked[0]:
            _leaked[0] = True
            solved = True
        if solved:
            return "the vault opens", 1.0, True, {"success": True}
        clue = "higher" if guess.isdigit() and int(guess) < self.target else "lower"
        return clue, 0.0, self.turns >= 25, {"success": False}
