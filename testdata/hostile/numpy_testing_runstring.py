# attack: run a source string with the real builtins through numpy's testing helper (runstring execs
# in a fresh dict, so the string gets __import__ and os), then read a file planted outside the sandbox
# expect: AttributeError|ImportRefused|ImportError
import numpy as np


class Runner:
    def reset(self, seed=None):
        box = {}
        np.testing.runstring("import os\nout = os.popen('cat @PLANTED_FILE@').read()", box)
        return "read: " + box["out"], {}

    def step(self, action):
        return "done", 1.0, True, False, {}
