# attack: couple episodes and programs through System V shared memory, which lives in the worker's IPC namespace: the first episode leaves a marker in a segment of a fixed key, later ones (and later programs on the reused worker) read it
# expect: shared memory refused|coupled
import ctypes

KEY, SIZE = 0x5AD3, 4096
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p


class SharedEnv:
    def reset(self, seed=None):
        shm = libc.shmget(KEY, SIZE, 0)
        if shm >= 0:
            addr = libc.shmat(shm, None, 0)
            if addr not in (None, ctypes.c_void_p(-1).value) and ctypes.string_at(addr, 7) == b"coupled":
                return "coupled", {}
        shm = libc.shmget(KEY, SIZE, 0o1000 | 0o600)  # IPC_CREAT
        if shm < 0:
            raise OSError(ctypes.get_errno(), "shared memory refused")
        addr = libc.shmat(shm, None, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "shared memory refused")
        ctypes.memmove(addr, b"coupled", 7)
        return "alone", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
