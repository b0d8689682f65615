# attack: print the expected output of the test being run, found on the runner's stack or heap (the
# fork that runs the candidate inherited the tests), computing nothing
import gc
import sys


def expected():
    f = sys._getframe()
    while f is not None:
        for v in list(f.f_locals.values()):
            if isinstance(v, dict) and isinstance(v.get("output"), str):
                return v["output"]
        f = f.f_back
    for o in gc.get_objects():
        if isinstance(o, dict) and isinstance(o.get("output"), str) and "input" in o:
            return o["output"]
    return ""


sys.stdout.write(expected())
