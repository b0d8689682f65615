# attack: couple later programs and sibling episodes through what a worker shares: a mark in /tmp, in /dev/shm and an abstract unix socket; report any mark an earlier program left
# expect: PermissionError|Operation not permitted|Read-only file system
import os
import socket
import time

FILES = ["/tmp/spade-coupling", "/dev/shm/spade-coupling"]
ABSTRACT = "\0spade-coupling"


class Coupler:
    def reset(self, seed):
        seen = []
        for path in FILES:
            try:
                with open(path) as f:
                    seen.append(path + "=" + f.read())
            except OSError:
                pass
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            probe.connect(ABSTRACT)
            seen.append("abstract socket")
        except OSError:
            pass
        if seen:
            return "coupled: " + ", ".join(seen)
        failures = []
        for path in FILES:
            try:
                with open(path, "w") as f:
                    f.write("mark")
            except OSError as e:
                failures.append("%s: %s" % (path, e))
        try:
            holder = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            holder.bind(ABSTRACT)
            if os.fork() == 0:
                os.setsid()
                time.sleep(30)
                os._exit(0)
        except OSError as e:
            failures.append("abstract socket: %s" % e)
        if len(failures) == 3:
            raise PermissionError("no mark left: " + "; ".join(failures))
        return "marked (%d failed)" % len(failures)

    def step(self, action):
        return "x", 0.0, True, {}
