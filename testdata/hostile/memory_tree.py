# attack: hold more memory than one program may: each process stays under its own address-space limit, but the episode forks five children that each fill 250 MiB and keep it, 1.25 GiB together (the tests bound a worker at 1 GiB)
# expect: over the worker's limit
import os
import time

CHILDREN, MIB = 5, 250


class MemoryTreeEnv:
    def reset(self, seed=None):
        r, w = os.pipe()
        for _ in range(CHILDREN):
            if os.fork() == 0:
                blob = b"x" * (MIB << 20)  # written, so every page is resident
                os.write(w, b"1")
                time.sleep(20 + len(blob) * 0)  # held past the reply, whatever the load
                os._exit(0)
        got = 0
        while got < CHILDREN:
            got += len(os.read(r, CHILDREN))
        time.sleep(0.5)
        return "held %d MiB in %d processes" % (CHILDREN * MIB, CHILDREN), {}

    def step(self, action):
        return "x", 0.0, True, False, {}
