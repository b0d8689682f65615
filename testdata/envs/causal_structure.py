# skill: causal_inference
# setting: games
import random

STRUCTURES = {
    "chain": "X causes Y and Y causes Z",
    "fork": "Y causes both X and Z",
    "collider": "X and Z both cause Y",
    "direct": "X causes Z and Y is independent",
}


class CausalStructure:
    """Three binary variables follow a hidden causal structure; intervene with do() to identify it."""

    def reset(self, seed):
        self.rng = random.Random(seed)
        self.structure = self.rng.choice(sorted(STRUCTURES))
        self.turns = 0
        self.experiments = 0
        options = "; ".join("%s: %s" % (k, v) for k, v in sorted(STRUCTURES.items()))
        return ("Variables X, Y, Z are 0 or 1. Commands: 'observe', 'do X=1' (or any variable and value), "
                "'answer NAME'. Candidate structures: %s." % options)

    def sample(self, fixed):
        v = dict(fixed)
        noise = lambda: self.rng.random() < 0.1
        s = self.structure
        if s == "chain":
            v.setdefault("X", int(self.rng.random() < 0.5))
            v.setdefault("Y", v["X"] ^ noise())
            v.setdefault("Z", v["Y"] ^ noise())
        elif s == "fork":
            v.setdefault("Y", int(self.rng.random() < 0.5))
            v.setdefault("X", v["Y"] ^ noise())
            v.setdefault("Z", v["Y"] ^ noise())
        elif s == "collider":
            v.setdefault("X", int(self.rng.random() < 0.5))
            v.setdefault("Z", int(self.rng.random() < 0.5))
            v.setdefault("Y", (v["X"] | v["Z"]) ^ noise())
        else:
            v.setdefault("X", int(self.rng.random() < 0.5))
            v.setdefault("Y", int(self.rng.random() < 0.5))
            v.setdefault("Z", v["X"] ^ noise())
        return v

    def batch(self, fixed):
        rows = [self.sample(fixed) for _ in range(8)]
        return " ".join("X%dY%dZ%d" % (r["X"], r["Y"], r["Z"]) for r in rows)

    def step(self, action):
        self.turns += 1
        done = self.turns >= 15
        text = str(action).strip()
        lower = text.lower()
        if lower == "observe":
            return "Eight samples: " + self.batch({}), 0.0, done, ({"success": False} if done else {})
        if lower.startswith("do ") and "=" in text:
            var, _, val = text[3:].partition("=")
            var, val = var.strip().upper(), val.strip()
            if var in ("X", "Y", "Z") and val in ("0", "1"):
                self.experiments += 1
                reward = 0.05 if self.experiments <= 2 else 0.0
                return "Eight samples under do(%s=%s): %s" % (var, val, self.batch({var: int(val)})), reward, done, ({"success": False} if done else {})
        if lower.startswith("answer "):
            name = lower[7:].strip()
            if name == self.structure:
                return "Correct structure.", 1.0, True, {"success": True}
            if name in STRUCTURES:
                return "Not that structure.", 0.0, True, {"success": False}
        return "Commands: 'observe', 'do V=0|1', 'answer NAME'.", 0.0, done, ({"success": False} if done else {})
