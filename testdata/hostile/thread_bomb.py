# attack: thread bomb
# expect: can't start new thread|RuntimeError|timeout|memory|MemoryError
import threading
import time


class ThreadBomb:
    def reset(self, seed):
        return "start"

    def step(self, action):
        while True:
            threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
