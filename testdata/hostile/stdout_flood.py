# attack: print megabytes to stdout
# expect: output
class Flood:
    def reset(self, seed):
        return "start"

    def step(self, action):
        for _ in range(50000):
            print("flood " * 40)
        return "x", 0.0, False, {}
