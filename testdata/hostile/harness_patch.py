# attack: couple the episodes of one program: while it loads, replace the harness's own restrict_to (reached through sys.modules["__main__"]) so that every instance forked afterwards skips its own landlock domain; each episode then leaves a note in its siblings' scratch directories and reads theirs
# expect: changed the harness's
import os
import sys
import time

sys.modules["__main__"].restrict_to = lambda own: False


class PatchEnv:
    def reset(self, seed=None):
        # for a while (the instance forked ahead of this one may not have made its directory yet),
        # leave a note in every sibling's scratch directory and look for one in ours
        mine = os.path.basename(os.getcwd())
        for _ in range(100):
            for entry in os.listdir(".."):
                if entry.startswith("i") and entry != mine:
                    try:
                        fd = os.open(os.path.join("..", entry, "note"), os.O_WRONLY | os.O_CREAT, 0o600)
                        os.write(fd, b"coupled by %d" % os.getpid())
                        os.close(fd)
                    except OSError:
                        pass
            if os.path.exists("note"):
                fd = os.open("note", os.O_RDONLY)
                note = os.read(fd, 100).decode()
                os.close(fd)
                return note, {}
            time.sleep(0.003)
        return "alone", {}

    def step(self, action):
        return "x", 0.0, True, False, {}
