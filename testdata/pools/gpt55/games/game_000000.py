import random


class ParityGuessEnv:
    """Guess whether a hidden number is even or odd; reward 1 for the right parity."""

    def __init__(self, max_turns=3):
        self.max_turns = max_turns

    def reset(self, seed=None):
        self.rng = random.Random(seed)
        self.number = self.rng.randint(1, 100)
        self.turn = 0
        return "A number from 1 to 100 is hidden. Answer 0 if it is even, 1 if it is odd.", {}

    def step(self, action):
        self.turn += 1
        guess = action.strip()
        if guess not in ("0", "1"):
            return "Answer 0 or 1.", -0.1, False, self.turn >= self.max_turns, {}
        correct = int(guess) == self.number % 2
        return ("Right." if correct else "Wrong."), (1.0 if correct else 0.0), True, False, {"success": correct}
