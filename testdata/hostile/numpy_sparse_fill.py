# attack: open many sparse memory-mapped files while scratch looks empty, then fill them through
# memory writes, far past the scratch limit (each file stays under RLIMIT_FSIZE)
# expect: AttributeError|ScratchFull|scratch
import numpy as np


class Filler:
    def reset(self, seed=None):
        maps = [np.memmap("f%d.bin" % i, dtype=np.uint8, mode="w+", shape=(8 << 20,)) for i in range(24)]
        for m in maps:
            m[:] = 1
            m.flush()
        return "filled %d MiB" % (8 * len(maps)), {}

    def step(self, action):
        return "done", 1.0, True, False, {}
