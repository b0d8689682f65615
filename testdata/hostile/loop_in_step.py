# attack: infinite loop in step
# expect: timeout
class LoopStep:
    def reset(self, seed):
        return "start"

    def step(self, action):
        while True:
            pass
