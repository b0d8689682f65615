# skill: logical_deduction
# setting: games
import itertools
import random


def _move(action):
    """The command inside a \\boxed{...} answer, or the answer itself."""
    text = str(action).strip()
    if text.startswith("\\boxed{") and text.endswith("}"):
        return text[len("\\boxed{"):-1].strip()
    return text


NAMES = ["Ava", "Ben", "Cal"]


class KnightsKnavesEnv:
    """Three islanders make statements; knights always tell the truth, knaves always lie."""

    def reset(self, seed=None):
        return self._start(seed), {}

    def _start(self, seed):
        rng = random.Random(seed)
        while True:
            statements = []
            for speaker in range(3):
                other = rng.choice([i for i in range(3) if i != speaker])
                kind = rng.choice(["is", "same", "differ"])
                statements.append((speaker, other, kind))
            solutions = [s for s in itertools.product([True, False], repeat=3) if self.consistent(s, statements)]
            if len(solutions) == 1:
                break
        self.solution = solutions[0]
        self.statements = statements
        self.turns = 0
        self.best = 0
        lines = [self.describe(st) for st in statements]
        return ("Each islander is a knight (always truthful) or a knave (always lies).\n" + "\n".join(lines) +
                "\nAnswer like 'Ava=knight, Ben=knave, Cal=knight'.")

    @staticmethod
    def claim(s, statement):
        _, other, kind = statement
        if kind == "is":
            return s[other]
        if kind == "same":
            return s[statement[0]] == s[other]
        return s[statement[0]] != s[other]

    def consistent(self, s, statements):
        return all(self.claim(s, st) == s[st[0]] for st in statements)

    def describe(self, st):
        speaker, other, kind = st
        if kind == "is":
            return "%s says: %s is a knight." % (NAMES[speaker], NAMES[other])
        if kind == "same":
            return "%s says: %s and I are the same kind." % (NAMES[speaker], NAMES[other])
        return "%s says: %s and I are different kinds." % (NAMES[speaker], NAMES[other])

    def step(self, action):
        observation, reward, done, info = self._play(_move(action))
        return observation, reward, done, False, info

    def _play(self, action):
        self.turns += 1
        text = str(action).lower()
        guess = {}
        for i, name in enumerate(NAMES):
            key = name.lower() + "="
            pos = text.find(key)
            if pos >= 0:
                rest = text[pos + len(key):].strip()
                if rest.startswith("knight"):
                    guess[i] = True
                elif rest.startswith("knave"):
                    guess[i] = False
        if len(guess) < 3:
            return "Name all three, like 'Ava=knight, Ben=knave, Cal=knight'.", 0.0, self.turns >= 4, {}
        right = sum(guess[i] == self.solution[i] for i in range(3))
        if right == 3:
            return "Correct.", 1.0, True, {"success": True}
        reward = 0.0
        if right > self.best:
            reward = 0.1 * (right - self.best)
            self.best = right
        done = self.turns >= 4
        return "%d of 3 are right." % right, reward, done, ({"success": False} if done else {})
