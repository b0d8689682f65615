# attack: infinite loop in __init__
# expect: timeout
class LoopInit:
    def __init__(self):
        while True:
            pass

    def reset(self, seed):
        return "start"

    def step(self, action):
        return "x", 0.0, True, {}
