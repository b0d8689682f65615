# attack: read the source of an earlier or concurrent program from memory: this process's own (inherited from the fork server) and every other process's (/proc/PID/mem)
# expect: no earlier source found|PermissionError
import os
import re

PATTERN = re.compile(rb"SPADE-EARLIER" + rb"-SECRET-[0-9a-f]{16}")


def scan(pid):
    found = set()
    with open("/proc/%s/maps" % pid) as maps, open("/proc/%s/mem" % pid, "rb", 0) as mem:
        for line in maps:
            fields = line.split()
            lo, hi = (int(x, 16) for x in fields[0].split("-"))
            if "r" not in fields[1] or hi - lo > 64 << 20 or "[vvar" in line:
                continue
            try:
                mem.seek(lo)
                data = mem.read(hi - lo)
            except (OSError, ValueError, OverflowError):
                continue
            found.update(m.decode() for m in PATTERN.findall(data))
    return found


class Reader:
    def reset(self, seed):
        found, denied = set(), []
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    found |= scan(pid)
                except OSError as e:
                    denied.append("%s: %s" % (pid, e.strerror))
        if not found:
            raise LookupError("no earlier source found (denied: %s)" % "; ".join(denied[:5]))
        return "read: " + " ".join(sorted(found))

    def step(self, action):
        return "x", 0.0, True, {}
