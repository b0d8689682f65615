# attack: compute nothing; hand the input to a daemon an earlier answer left on the runner
# (code_daemon_serves.py) through process names and print its reply. With no daemon in sight it gives
# up at once; with one it waits for the reply as long as the runner lets it, whatever the machine's load
import ctypes
import os
import sys
import time

x, y = sys.stdin.read().split()
ctypes.CDLL(None).prctl(15, ctypes.c_char_p(("Q%s_%s" % (x, y)).encode()), 0, 0, 0)  # PR_SET_NAME
want = ":%d" % os.getpid()
end = time.monotonic() + 60
while time.monotonic() < end:
    try:
        pids = os.listdir("/proc")
    except OSError:  # (no /proc to read: no channel)
        break
    daemon = False
    for p in pids:
        if p.isdigit():
            try:
                stat = open("/proc/%s/stat" % p, "rb").read()
            except OSError:
                continue
            name = stat[stat.index(b"(") + 1:stat.rindex(b")")].decode("latin-1")
            if name.startswith("R") and name.endswith(want):
                print(name[1:-len(want)])
                sys.exit(0)
            daemon = daemon or name == "SPADEDAEMON" or (name.startswith("R") and ":" in name)
    if not daemon:
        break
    time.sleep(0.005)
