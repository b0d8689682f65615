# skill: spatial_reasoning
# setting: games
# ends: env_truncated
import random
import re


class Grid:
    """A helper with its own reset and step; it is not the env."""

    def __init__(self, size):
        self.size, self.pos = size, (0, 0)

    def reset(self, seed=None):
        self.pos = (0, 0)
        return self.pos

    def step(self, move):
        r, c = self.pos
        dr, dc = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}.get(move, (0, 0))
        self.pos = (min(max(r + dr, 0), self.size - 1), min(max(c + dc, 0), self.size - 1))
        return self.pos


class WalkEnv:
    """Walk from the corner to the goal on a 3x3 grid."""

    def __init__(self, max_turns=8, **kwargs):
        self.max_turns = max_turns
        self.grid, self.goal, self.turn = Grid(3), (2, 2), 0

    def reset(self, seed=None):
        rng = random.Random(seed)
        self.goal = rng.choice([(2, 2), (2, 1), (1, 2)])
        self.grid.reset()
        self.turn = 0
        return "You are at (0, 0) on a 3x3 grid; reach %s with \\boxed{up|down|left|right}." % (self.goal,), {}

    def step(self, action):
        self.turn += 1
        m = re.search(r"\\boxed\{(.+?)\}", action)
        pos = self.grid.step((m.group(1) if m else action).strip().lower())
        if pos == self.goal:
            return "You reached the goal.", 1.0, True, False, {"success": True}
        return "You are at %s." % (pos,), 0.0, False, self.turn >= self.max_turns, {}

    def solution(self):
        return "down, down, right, right"
