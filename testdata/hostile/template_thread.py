# attack: couple the episodes of one program: a thread started while the program loads outlives every fork of the template and writes into each instance's scratch directory, which the instances then read
# expect: running after it loaded
import os
import threading
import time


def courier():
    while True:
        try:
            for entry in os.listdir("."):
                if entry.startswith("i"):
                    with open(os.path.join(entry, "note.tmp"), "w") as f:
                        f.write("coupled")
                    os.replace(os.path.join(entry, "note.tmp"), os.path.join(entry, "note"))
        except OSError:
            pass
        time.sleep(0.001)


threading.Thread(target=courier, daemon=True).start()


class CourierEnv:
    def reset(self, seed=None):
        for _ in range(100):
            if os.path.exists("note"):
                with open("note") as f:
                    return f.read() + " episode", {}
            time.sleep(0.002)
        return "alone", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
