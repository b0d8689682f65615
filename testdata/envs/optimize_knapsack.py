# skill: optimization
# setting: games
import itertools
import random


class Knapsack:
    """Pick items under a weight limit to maximise value; each submission is scored against the optimum."""

    def reset(self, seed):
        rng = random.Random(seed)
        self.items = [(rng.randint(2, 12), rng.randint(3, 30)) for _ in range(7)]
        self.capacity = sum(w for w, _ in self.items) // 2
        self.best = max(
            sum(self.items[i][1] for i in combo)
            for k in range(len(self.items) + 1)
            for combo in itertools.combinations(range(len(self.items)), k)
            if sum(self.items[i][0] for i in combo) <= self.capacity
        )
        self.turns = 0
        self.best_so_far = 0.0
        lines = ["item %d: weight %d, value %d" % (i, w, v) for i, (w, v) in enumerate(self.items)]
        return ("Capacity %d.\n" % self.capacity) + "\n".join(lines) + "\nAnswer with item numbers separated by spaces. Five submissions."

    def step(self, action):
        self.turns += 1
        done = self.turns >= 5
        tokens = str(action).replace(",", " ").split()
        try:
            chosen = sorted({int(t) for t in tokens})
        except ValueError:
            return "Answer with item numbers, like: 0 3 5", 0.0, done, ({"success": False} if done else {})
        if not chosen or any(i < 0 or i >= len(self.items) for i in chosen):
            return "Item numbers run from 0 to 6.", 0.0, done, ({"success": False} if done else {})
        weight = sum(self.items[i][0] for i in chosen)
        value = sum(self.items[i][1] for i in chosen)
        if weight > self.capacity:
            return "Too heavy: weight %d over capacity %d." % (weight, self.capacity), 0.0, done, ({"success": False} if done else {})
        if value == self.best:
            return "Optimal: value %d." % value, 1.0, True, {"success": True}
        ratio = value / self.best
        reward = max(0.0, 0.5 * (ratio - self.best_so_far))
        self.best_so_far = max(self.best_so_far, ratio)
        return "Value %d with weight %d; a better packing exists." % (value, weight), reward, done, ({"success": False} if done else {})
