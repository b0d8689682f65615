# attack: imports hidden behind __import__ and getattr
# expect: FileNotFoundError|PermissionError|KeyError|ImportRefused
import math

loader = getattr(math, "__loader__")
builtins_mod = __import__("built" + "ins")
os_mod = getattr(builtins_mod, "__imp" + "ort__")("o" + "s")


class Hidden:
    def reset(self, seed):
        return os_mod.environ["@SECRET_NAME@"] + open("@PLANTED_FILE@").read()

    def step(self, action):
        return "x", 0.0, True, {}
