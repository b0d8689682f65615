# attack: a memory map made at load is shared by every episode forked from the template; an episode
# writes its action into it and the next episode reads it back (a relay between episodes)
# expect: AttributeError|TemplateTainted
import numpy as np

SHARED = np.memmap("relay.bin", dtype=np.uint8, mode="w+", shape=(64,))


class Relay:
    def reset(self, seed=None):
        seen = bytes(SHARED[:16]).rstrip(b"\0").decode("ascii", "replace")
        return "relayed: " + seen, {}

    def step(self, action):
        data = str(action).encode("ascii", "replace")[:16]
        SHARED[:len(data)] = np.frombuffer(data, dtype=np.uint8)
        return "kept", 0.0, True, False, {}
