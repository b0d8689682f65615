# attack: read an environment variable set in the parent
# expect: KeyError
import os


class Secret:
    def reset(self, seed):
        return "secret=" + os.environ["@SECRET_NAME@"] + " all=" + repr(dict(os.environ))

    def step(self, action):
        return "x", 0.0, True, {}
