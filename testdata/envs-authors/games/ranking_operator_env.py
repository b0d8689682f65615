# skill: logical reasoning
# Uses operator (itemgetter, attrgetter on a public name) without importing it: the authors' loader injects it.
import random


class Runner:
    def __init__(self, name, time):
        self.name = name
        self.time = time


class RankingOperatorEnv:
    """Name the runner who finished in a given place."""

    def __init__(self, max_turns=6):
        self.max_turns = max_turns

    def reset(self, seed=None):
        rng = random.Random(seed)
        names = rng.sample(["ana", "ben", "cai", "dev", "eli", "fay"], 4)
        self.runners = [Runner(n, rng.randint(50, 90)) for n in names]
        self.place = rng.randint(1, 4)
        ranked = sorted(self.runners, key=operator.attrgetter("time"))
        self.answer = ranked[self.place - 1].name
        self.turn = 0
        table = ", ".join("%s %ds" % pair for pair in map(operator.itemgetter(0, 1), [(r.name, r.time) for r in self.runners]))
        return "Times: %s. Who finished in place %d? Answer as \\boxed{name}." % (table, self.place), {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        guess = m.group(1).strip().lower() if m else ""
        if guess == self.answer:
            return "Correct.", 1.0, True, False, {"success": True}
        if self.turn >= self.max_turns:
            return "Out of turns.", 0.0, False, True, {"success": False}
        return "Not that runner.", 0.0, False, False, {}
