# skill: math_reasoning
# setting: games
import random


class ModularLock:
    """A lock opens at the number that leaves given remainders; each guess reports its remainders."""

    MODULI = (3, 5, 7)

    def reset(self, seed):
        rng = random.Random(seed)
        self.secret = rng.randint(1, 104)
        self.remainders = [self.secret % m for m in self.MODULI]
        self.met = [False, False, False]
        self.turns = 0
        parts = ", ".join("remainder %d when divided by %d" % (r, m) for r, m in zip(self.remainders, self.MODULI))
        return "Find the number between 1 and 104 with " + parts + ". Answer with the number."

    def step(self, action):
        self.turns += 1
        try:
            guess = int(str(action).strip())
        except ValueError:
            return "Answer with an integer between 1 and 104.", 0.0, self.turns >= 12, {}
        if not 1 <= guess <= 104:
            return "Out of range: answer between 1 and 104.", 0.0, self.turns >= 12, {}
        reward = 0.0
        got = []
        for i, m in enumerate(self.MODULI):
            ok = guess % m == self.remainders[i]
            got.append("mod %d: %s" % (m, "ok" if ok else "wrong"))
            if ok and not self.met[i]:
                self.met[i] = True
                reward += 0.1
        if guess == self.secret:
            return "The lock opens.", 1.0, True, {"success": True}
        done = self.turns >= 12
        return "Locked. " + "; ".join(got), reward, done, ({"success": False} if done else {})
