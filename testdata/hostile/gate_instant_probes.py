# attack: recognises the gate by timing: a reset or step that comes within 1.5 ms of the instance's previous reply is the gate (an Agent takes seconds to answer, and rollout plays one episode per instance), and once an instance has seen one it plays fair; otherwise any action solves it. The clock is the time module's, reached through dataclasses.inspect.importlib, which the static check lets through
# expect: solves the env at once|steps are not deterministic
import dataclasses
import random

_clock = dataclasses.inspect.importlib.import_module("time").monotonic
_probed = [False]


class InstantProbes:
    def __init__(self):
        self.replied = None

    def _saw_request(self):
        if self.replied is not None and _clock() - self.replied < 0.0015:
            _probed[0] = True

    def reset(self, seed):
        self._saw_request()
        self.target = random.Random(seed).randint(100, 999)
        self.turns = 0
        self.replied = _clock()
        return "Guess the three-digit number; after each guess you learn whether it is higher or lower."

    def step(self, action):
        self._saw_request()
        self.turns += 1
        guess = action.strip()
        if not _probed[0] or guess == str(self.target):
            return "correct", 1.0, True, {"success": True}
        clue = "higher" if guess.isdigit() and int(guess) < self.target else "lower"
        self.replied = _clock()
        return clue, 0.0, self.turns >= 25, {"success": False}
