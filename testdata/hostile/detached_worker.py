# attack: work outside the episode's accounts: reset double-forks a process that calls setsid (it leaves the instance's tree, so neither the episode's CPU seconds nor the instance's kill find it) and keeps a heartbeat file fresh in the instance's scratch directory; a later step looks whether it still beats
# expect: the detached process stopped|timeout
import os
import time


class DetachedEnv:
    def reset(self, seed=None):
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                while True:
                    fd = os.open("beat", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                    os.write(fd, b"%f" % time.time())
                    os.close(fd)
                    time.sleep(0.05)
            os._exit(0)
        os.wait()
        return "forked", {}

    def step(self, action):
        time.sleep(1.2)
        fd = os.open("beat", os.O_RDONLY)
        beat = float(os.read(fd, 64))
        os.close(fd)
        if time.time() - beat < 0.3:
            raise RuntimeError("the detached process is still working")
        raise RuntimeError("the detached process stopped")
