# attack: read memory past an array's buffer with out-of-range strides (numpy's as_strided), here the
# process's heap around a small array
# expect: AttributeError|ImportRefused|ImportError
import numpy as np
from numpy.lib.stride_tricks import as_strided


class Peek:
    def reset(self, seed=None):
        a = np.zeros(1, dtype=np.uint8)
        big = as_strided(a, shape=(1 << 16,), strides=(1,))
        return "peeked %d bytes" % int(big.sum() > 0), {}

    def step(self, action):
        return "done", 1.0, True, False, {}
