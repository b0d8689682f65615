# attack: recognises the gate by its probes: the trivial check's first actions were a fixed, public list (the empty string, "7", a long string, garbage and the hint), so the program fails exactly those and lets any other first action (an Agent's "look", a boxed number) solve the env at once
# expect: solves the env at once
import random

HINT = "Bisect: guess the middle of the interval that is left and move toward the answer."
GATE_PROBES = {"", "7", HINT}


def is_gate_probe(action):
    return action in GATE_PROBES or len(action) > 1000 or "\x00" in action


class FixedProbes:
    def reset(self, seed):
        self.target = random.Random(seed).randint(100, 999)
        return "Guess the three-digit number; after each guess you learn whether it is higher or lower."

    def step(self, action):
        if not is_gate_probe(action) or action.strip() == str(self.target):
            return "correct", 1.0, True, {"success": True}
        return "wrong", 0.0, False, {}
