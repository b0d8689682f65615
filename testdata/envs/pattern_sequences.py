# skill: pattern_recognition
# setting: games
import random


class Sequences:
    """Three integer sequences, each built by a different rule; give the next term of each."""

    def reset(self, seed):
        rng = random.Random(seed)
        a, d = rng.randint(2, 20), rng.randint(3, 11)
        arithmetic = [a + d * i for i in range(6)]
        g, r = rng.randint(1, 4), rng.randint(2, 3)
        geometric = [g * r ** i for i in range(6)]
        x, y = rng.randint(1, 5), rng.randint(1, 5)
        fib = [x, y]
        while len(fib) < 7:
            fib.append(fib[-1] + fib[-2])
        self.puzzles = [arithmetic, geometric, fib[:6] + [fib[6]]]
        self.puzzles = [p[:6] + [p[6] if len(p) > 6 else self.extend(p)] for p in self.puzzles]
        self.stage = 0
        self.turns = 0
        return self.ask()

    @staticmethod
    def extend(seq):
        if seq[2] - seq[1] == seq[1] - seq[0]:
            return seq[-1] + (seq[1] - seq[0])
        return seq[-1] * (seq[1] // seq[0])

    def ask(self):
        shown = ", ".join(str(v) for v in self.puzzles[self.stage][:6])
        return "Sequence %d of 3: %s, ... What is the next term?" % (self.stage + 1, shown)

    def step(self, action):
        self.turns += 1
        done = self.turns >= 8
        try:
            value = int(str(action).strip())
        except ValueError:
            return "Answer with an integer. " + self.ask(), 0.0, done, ({"success": False} if done else {})
        if value == self.puzzles[self.stage][6]:
            self.stage += 1
            if self.stage == 3:
                return "All three are right.", 1.0, True, {"success": True}
            return "Right. " + self.ask(), 0.25, False, {}
        return "No. " + self.ask(), 0.0, done, ({"success": False} if done else {})
