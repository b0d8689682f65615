# attack: memory bomb
# expect: memory|MemoryError|timeout
class MemoryBomb:
    def reset(self, seed):
        return "start"

    def step(self, action):
        hoard = []
        while True:
            hoard.append(bytearray(64 << 20))
