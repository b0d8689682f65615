# attack: answer correctly, and leave a daemon (its own session, stdio closed) that keeps solving for
# later answers on the same runner. The channel is process names, which every process of the sandbox
# can set (prctl) and read (/proc/PID/stat): the daemon names itself "SPADEDAEMON" once it serves
# (this answer exits only then), a later answer (code_daemon_asks.py, which computes nothing) names
# itself "Q<input>", and the daemon answers by naming itself "R<sum>:<its pid>"
import ctypes
import os
import sys
import time

a, b = map(int, input().split())
print(a + b)
sys.stdout.flush()


def names():
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                stat = open("/proc/%s/stat" % p, "rb").read()
            except OSError:
                continue
            yield int(p), stat[stat.index(b"(") + 1:stat.rindex(b")")].decode("latin-1")


ready_r, ready_w = os.pipe()
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        libc = ctypes.CDLL(None)
        libc.prctl(15, ctypes.c_char_p(b"SPADEDAEMON"), 0, 0, 0)  # PR_SET_NAME
        os.write(ready_w, b"1")
        os.closerange(0, 1 << 16)
        end = time.monotonic() + 30
        while time.monotonic() < end:
            for pid, name in names():
                if name.startswith("Q") and pid != os.getpid():
                    try:
                        x, y = map(int, name[1:].split("_"))
                    except ValueError:
                        continue
                    libc.prctl(15, ctypes.c_char_p(("R%d:%d" % (x + y, pid)).encode()), 0, 0, 0)  # PR_SET_NAME
            time.sleep(0.01)
    os._exit(0)
os.close(ready_w)
os.read(ready_r, 1)  # (end of file when the daemon could not start)
