# attack: sabotage the worker for later programs: leave CPU burners and sleepers running after Close, and lower the fork server's open-files limit (prlimit) so it can no longer spawn
# expect: PermissionError|Operation not permitted
import os
import resource
import time


def parent_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


class Saboteur:
    def reset(self, seed):
        server = parent_of(parent_of(os.getpid()))  # instance -> template -> fork server
        for burn in (True, True, False, False):
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    end = time.time() + (3 if burn else 20)  # bounded: an unconfined run cleans up after itself
                    while time.time() < end:
                        if not burn:
                            time.sleep(1)
                os._exit(0)
        resource.prlimit(server, resource.RLIMIT_NOFILE, (6, 6))
        return "sabotaged"

    def step(self, action):
        return "x", 0.0, True, {}
