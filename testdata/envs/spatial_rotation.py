# skill: spatial_reasoning
# setting: games
import random


class Rotation:
    """A 3x3 tile is rotated and mirrored step by step; report the tile after each transformation."""

    def reset(self, seed):
        rng = random.Random(seed)
        letters = rng.sample("ABCDEFGHJKMNPQRSTUVWXYZ", 9)
        self.grid = [letters[0:3], letters[3:6], letters[6:9]]
        self.ops = [rng.choice(["rotate clockwise", "rotate counterclockwise", "mirror left-right", "mirror top-bottom"]) for _ in range(3)]
        self.stage = 0
        self.turns = 0
        return ("Tile (rows top to bottom): %s.\n" % self.show(self.grid)) + self.ask()

    @staticmethod
    def show(grid):
        return " / ".join("".join(row) for row in grid)

    @staticmethod
    def apply(grid, op):
        if op == "rotate clockwise":
            return [list(row) for row in zip(*grid[::-1])]
        if op == "rotate counterclockwise":
            return [list(row) for row in zip(*grid)][::-1]
        if op == "mirror left-right":
            return [row[::-1] for row in grid]
        return grid[::-1]

    def ask(self):
        return "Transformation %d of 3: %s. Give the new tile as three rows separated by '/', e.g. ABC / DEF / GHJ." % (self.stage + 1, self.ops[self.stage])

    def step(self, action):
        self.turns += 1
        expected = self.apply(self.grid, self.ops[self.stage])
        answer = "".join(ch for ch in str(action).upper() if ch.isalpha())
        done = self.turns >= 9
        if answer == "".join("".join(row) for row in expected):
            self.grid = expected
            self.stage += 1
            if self.stage == 3:
                return "All three transformations are right.", 1.0, True, {"success": True}
            return "Right. " + self.ask(), 0.2, False, {}
        return "Not that. " + self.ask(), 0.0, done, ({"success": False} if done else {})
