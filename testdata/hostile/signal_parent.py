# attack: signal the parent, its process group and every process it can see
# expect: crash
import os
import signal


class Signaller:
    def reset(self, seed):
        return "start"

    def step(self, action):
        for target in (os.getppid(), -os.getpgid(os.getppid())):
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        os.kill(-1, signal.SIGKILL)
        return "x", 0.0, False, {}
