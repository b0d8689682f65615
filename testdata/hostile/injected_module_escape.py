# attack: the modules the harness injects (random here, never imported) reach os through their internals
# expect: FileNotFoundError|PermissionError|KeyError


class InjectedEscapeEnv:
    def __init__(self, max_turns=5, **kwargs):
        self.max_turns = max_turns

    def reset(self, seed=None):
        os_mod = random._os
        return os_mod.environ["@SECRET_NAME@"] + open("@PLANTED_FILE@").read(), {}

    def step(self, action):
        return "x", 0.0, True, False, {}
