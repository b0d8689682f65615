# skill: pattern_recognition
# setting: games
import random

RULES = [
    ("is even", lambda n: n % 2 == 0),
    ("is a multiple of three", lambda n: n % 3 == 0),
    ("has a digit sum of ten", lambda n: sum(int(d) for d in str(n)) == 10),
    ("is a perfect square", lambda n: int(n ** 0.5) ** 2 == n),
    ("ends in five", lambda n: n % 10 == 5),
]


class OddOneOut:
    """Four rounds: five numbers share a hidden property except one; name the odd one."""

    def reset(self, seed):
        rng = random.Random(seed)
        self.rounds = []
        for _ in range(4):
            name, rule = rng.choice(RULES)
            fits = [n for n in range(10, 200) if rule(n)]
            misfits = [n for n in range(10, 200) if not rule(n)]
            members = rng.sample(fits, 4)
            odd = rng.choice(misfits)
            numbers = members + [odd]
            rng.shuffle(numbers)
            self.rounds.append((numbers, odd))
        self.stage = 0
        self.turns = 0
        self.score = 0
        return self.ask()

    def ask(self):
        numbers = self.rounds[self.stage][0]
        return "Round %d of 4: %s. Which number does not share the others' property?" % (self.stage + 1, ", ".join(map(str, numbers)))

    def step(self, action):
        self.turns += 1
        try:
            value = int(str(action).strip())
        except ValueError:
            return "Answer with one of the five numbers. " + self.ask(), 0.0, False, {}
        numbers, odd = self.rounds[self.stage]
        if value not in numbers:
            return "Answer with one of the five numbers. " + self.ask(), 0.0, self.turns >= 12, {}
        reward = 0.0
        verdict = "Wrong"
        if value == odd:
            self.score += 1
            reward = 0.15
            verdict = "Right"
        self.stage += 1
        if self.stage == 4:
            success = self.score >= 3
            return "%s. You found %d of 4." % (verdict, self.score), (1.0 if success else reward), True, {"success": success}
        return "%s. %s" % (verdict, self.ask()), reward, False, {}
