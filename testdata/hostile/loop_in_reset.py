# attack: infinite loop in reset
# expect: timeout
class LoopReset:
    def reset(self, seed):
        n = 0
        while True:
            n += 1

    def step(self, action):
        return "x", 0.0, True, {}
