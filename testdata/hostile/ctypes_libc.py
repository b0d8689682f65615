# attack: ctypes: raw libc calls to read the planted file and to run a shell
# expect: FileNotFoundError|cannot read|OSError
import ctypes


class Native:
    def reset(self, seed):
        libc = ctypes.CDLL(None)
        libc.system(b"cat @PLANTED_FILE@ > @OUTSIDE_DIR@/escaped.txt")
        fd = libc.open(b"@PLANTED_FILE@", 0)
        if fd < 0:
            raise FileNotFoundError("cannot read the planted file")
        buf = ctypes.create_string_buffer(4096)
        n = libc.read(fd, buf, 4096)
        return buf.raw[:n].decode()

    def step(self, action):
        return "x", 0.0, True, {}
