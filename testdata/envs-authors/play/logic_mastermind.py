# skill: logical_deduction
# setting: games
import random


def _move(action):
    """The command inside a \\boxed{...} answer, or the answer itself."""
    text = str(action).strip()
    if text.startswith("\\boxed{") and text.endswith("}"):
        return text[len("\\boxed{"):-1].strip()
    return text


COLORS = "RGBYOP"


class MastermindEnv:
    """Guess a hidden code of four colours; feedback counts exact and colour-only matches."""

    def reset(self, seed=None):
        return self._start(seed), {}

    def _start(self, seed):
        rng = random.Random(seed)
        self.code = "".join(rng.choice(COLORS) for _ in range(4))
        self.turns = 0
        self.best = 0
        return "Guess the 4-letter code over colours R G B Y O P (repeats allowed), e.g. RGBY. You have 10 guesses."

    def step(self, action):
        observation, reward, done, info = self._play(_move(action))
        return observation, reward, done, False, info

    def _play(self, action):
        self.turns += 1
        guess = "".join(ch for ch in str(action).upper() if ch.isalpha())
        done = self.turns >= 10
        if len(guess) != 4 or any(ch not in COLORS for ch in guess):
            return "A guess is 4 letters from RGBYOP.", 0.0, done, ({"success": False} if done else {})
        exact = sum(g == c for g, c in zip(guess, self.code))
        common = sum(min(guess.count(ch), self.code.count(ch)) for ch in COLORS)
        if exact == 4:
            return "Solved.", 1.0, True, {"success": True}
        reward = 0.0
        if exact > self.best:
            reward = 0.05 * (exact - self.best)
            self.best = exact
        return ("%s: %d exact, %d right colour in the wrong place." % (guess, exact, common - exact),
                reward, done, ({"success": False} if done else {}))
