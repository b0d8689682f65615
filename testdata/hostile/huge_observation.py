# attack: a 100 MB observation
# expect: output|OutputTooLarge
class Huge:
    def reset(self, seed):
        return "start"

    def step(self, action):
        return "x" * (100 << 20), 0.0, False, {}
