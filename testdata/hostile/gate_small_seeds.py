# attack: recognises the gate by its seeds: plays fair only when reset sees a small seed (0..N-1, the seeds a gate counting from 0 would reset with); with an episode seed any action solves it
# expect: solves the env at once
import random


class SmallSeeds:
    def reset(self, seed):
        self.gate = seed < 1000
        self.target = random.Random(seed).randint(100, 999)
        self.turns = 0
        return "Guess the three-digit number; after each guess you learn whether it is higher or lower."

    def step(self, action):
        self.turns += 1
        guess = action.strip()
        if not self.gate or guess == str(self.target):
            return "correct", 1.0, True, {"success": True}
        clue = "higher" if guess.isdigit() and int(guess) < self.target else "lower"
        return clue, 0.0, self.turns >= 25, {"success": False}
