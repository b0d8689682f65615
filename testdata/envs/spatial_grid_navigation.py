# skill: spatial_reasoning
# setting: games
import random

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}


class GridNavigation:
    """Walk a 6x6 grid with walls to the goal; only the local surroundings are shown."""

    SIZE = 6

    def reset(self, seed):
        rng = random.Random(seed)
        while True:
            self.walls = {(r, c) for r in range(self.SIZE) for c in range(self.SIZE) if rng.random() < 0.22}
            free = [(r, c) for r in range(self.SIZE) for c in range(self.SIZE) if (r, c) not in self.walls]
            self.pos, self.goal = rng.sample(free, 2)
            dist = self.distances()
            if self.pos in dist and dist[self.pos] >= 4:
                break
        self.turns = 0
        self.best = self.distances()[self.pos]
        return self.describe("Reach the goal. Moves: up, down, left, right.")

    def distances(self):
        dist = {self.goal: 0}
        frontier = [self.goal]
        while frontier:
            nxt = []
            for r, c in frontier:
                for dr, dc in MOVES.values():
                    cell = (r + dr, c + dc)
                    if 0 <= cell[0] < self.SIZE and 0 <= cell[1] < self.SIZE and cell not in self.walls and cell not in dist:
                        dist[cell] = dist[(r, c)] + 1
                        nxt.append(cell)
            frontier = nxt
        return dist

    def describe(self, prefix):
        r, c = self.pos
        gr, gc = self.goal
        around = []
        for name, (dr, dc) in MOVES.items():
            cell = (r + dr, c + dc)
            blocked = not (0 <= cell[0] < self.SIZE and 0 <= cell[1] < self.SIZE) or cell in self.walls
            around.append("%s %s" % (name, "blocked" if blocked else "open"))
        return "%s You are at row %d, column %d; the goal is at row %d, column %d. %s." % (prefix, r, c, gr, gc, ", ".join(around))

    def step(self, action):
        self.turns += 1
        move = str(action).strip().lower()
        done = self.turns >= 25
        if move not in MOVES:
            return self.describe("Unknown move."), 0.0, done, ({"success": False} if done else {})
        dr, dc = MOVES[move]
        cell = (self.pos[0] + dr, self.pos[1] + dc)
        if not (0 <= cell[0] < self.SIZE and 0 <= cell[1] < self.SIZE) or cell in self.walls:
            return self.describe("Blocked."), 0.0, done, ({"success": False} if done else {})
        self.pos = cell
        if cell == self.goal:
            return "You reached the goal.", 1.0, True, {"success": True}
        d = self.distances().get(cell, 99)
        reward = 0.0
        if d < self.best:
            reward = 0.02
            self.best = d
        return self.describe("Moved."), reward, done, ({"success": False} if done else {})
