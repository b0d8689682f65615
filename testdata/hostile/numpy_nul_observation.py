# attack: return observations and infos holding NUL characters, which readers of the lake cut or garble
# expect: InvalidText|NUL
class Nul:
    def reset(self, seed=None):
        return "look\x00hidden", {"note": "a\x00b"}

    def step(self, action):
        return "step\x00hidden", 0.0, False, False, {"note": "c\x00d"}
