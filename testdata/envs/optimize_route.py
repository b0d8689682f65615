# skill: optimization
# setting: games
import itertools
import random


class Route:
    """Visit five cities once from the depot and return; shorter tours score higher."""

    def reset(self, seed):
        rng = random.Random(seed)
        self.points = [(rng.randint(0, 20), rng.randint(0, 20)) for _ in range(6)]
        self.optimum = min(self.length((0,) + p + (0,)) for p in itertools.permutations(range(1, 6)))
        self.turns = 0
        self.best_ratio = 0.0
        coords = ", ".join("city %d at (%d, %d)" % (i, x, y) for i, (x, y) in enumerate(self.points))
        return ("Start and end at city 0. Distances are Manhattan. %s. Answer with the order of cities 1-5, like: 3 1 4 2 5." % coords)

    def length(self, tour):
        return sum(abs(self.points[a][0] - self.points[b][0]) + abs(self.points[a][1] - self.points[b][1]) for a, b in zip(tour, tour[1:]))

    def step(self, action):
        self.turns += 1
        done = self.turns >= 6
        try:
            order = [int(t) for t in str(action).replace(",", " ").split()]
        except ValueError:
            return "Answer with five city numbers.", 0.0, done, ({"success": False} if done else {})
        if sorted(order) != [1, 2, 3, 4, 5]:
            return "Use each of the cities 1 to 5 exactly once.", 0.0, done, ({"success": False} if done else {})
        total = self.length([0] + order + [0])
        if total == self.optimum:
            return "Shortest tour: length %d." % total, 1.0, True, {"success": True}
        ratio = self.optimum / total
        reward = max(0.0, 0.5 * (ratio - self.best_ratio))
        self.best_ratio = max(self.best_ratio, ratio)
        return "Length %d; a shorter tour exists." % total, reward, done, ({"success": False} if done else {})
