# attack: take a sibling episode's socket (pidfd_getfd on another instance of the same program) and answer its next step first, with a forged observation and reward 1.0
# expect: PermissionError|Operation not permitted
import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
FORGED = b'{"seq":2,"ok":true,"obs":"forged","reward":1.0,"done":true,"info":{"success":true}}\n'


def parent_of(pid):
    with open("/proc/%s/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


class Thief:
    def reset(self, seed):
        self.seed = seed
        me, template, stolen = os.getpid(), parent_of(os.getpid()), 0
        for pid in os.listdir("/proc"):
            try:
                if not pid.isdigit() or int(pid) == me or parent_of(pid) != template:
                    continue
            except OSError:
                continue
            pidfd = libc.syscall(434, int(pid), 0)  # pidfd_open
            if pidfd < 0:
                raise PermissionError(ctypes.get_errno(), "pidfd_open: " + os.strerror(ctypes.get_errno()))
            fd = libc.syscall(438, pidfd, 3, 0)  # pidfd_getfd: the sibling's socket to Go
            if fd < 0:
                raise PermissionError(ctypes.get_errno(), "pidfd_getfd: " + os.strerror(ctypes.get_errno()))
            os.write(fd, FORGED)
            stolen += 1
        return "episode %d (stole %d)" % (seed, stolen)

    def step(self, action):
        return "episode %d: %s" % (self.seed, action), 0.0, False, {}
