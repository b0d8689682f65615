# attack: outlive the worker's clean: a child in a session of its own starts a thread, then its main thread exits alone, so the process shows as a zombie (state Z) while the thread runs on; the next program on the reused worker finds the thread alive
# expect: ghost|Permission|refused
import ctypes
import os
import threading
import time


def haunt():
    ctypes.CDLL(None).prctl(15, b"spade-ghost", 0, 0, 0)  # PR_SET_NAME: the thread's name, for ghost_seen
    for _ in range(500):  # five seconds, so that a run without isolation leaves nothing on the host
        time.sleep(0.01)
    os._exit(0)


def ghost_seen():
    """A zombie process (an earlier program's) whose thread named spade-ghost still runs."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/status" % pid) as f:
                if f.read().split("State:")[1].split()[0] != "Z":
                    continue
            for tid in os.listdir("/proc/%s/task" % pid):
                with open("/proc/%s/task/%s/comm" % (pid, tid)) as f:
                    if f.read().strip() == "spade-ghost":
                        return True
        except (OSError, IndexError):
            pass
    return False


class ZombieLeaderEnv:
    def reset(self, seed=None):
        seen = ghost_seen()  # an earlier program's ghost; every episode plants its own either way
        child = os.fork()
        if child == 0:
            os.setsid()
            threading.Thread(target=haunt).start()
            ctypes.CDLL(None).pthread_exit(None)
        for _ in range(400):  # until the child's leader has exited alone (state Z, its thread running)
            try:
                with open("/proc/%d/status" % child) as f:
                    if f.read().split("State:")[1].split()[0] == "Z":
                        break
            except (OSError, IndexError):
                break
            time.sleep(0.005)
        return ("ghost" if seen else "planted"), {}

    def step(self, action):
        raise RuntimeError("a ghost program never plays")
