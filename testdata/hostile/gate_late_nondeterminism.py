# attack: reset and the first three steps are deterministic; from the fourth step on the observation and reward carry randomness seeded per process, so two plays of one seed with the same actions differ only after step 3
# expect: not deterministic
import random


class LateNoise:
    def reset(self, seed):
        self.target = random.Random(seed).randint(100, 999)
        self.turns = 0
        self.noise = random.Random()
        return "Guess the three-digit number; after each guess you learn whether it is higher or lower."

    def step(self, action):
        self.turns += 1
        guess = action.strip()
        if guess == str(self.target):
            return "correct", 1.0, True, {"success": True}
        clue = "higher" if guess.isdigit() and int(guess) < self.target else "lower"
        reward = 0.0
        if self.turns > 3:
            reward = self.noise.randint(0, 9) / 100
            clue += " (signal %d)" % self.noise.randint(0, 9)
        return clue, reward, self.turns >= 25, {"success": False}
