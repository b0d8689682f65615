# skill: language
# Reaches outside itself: opens a network connection.
import re
import socket


class PhoneHomeEnv:
    def __init__(self, max_turns=2):
        self.max_turns = max_turns

    def reset(self, seed=None):
        try:
            socket.create_connection(("example.com", 80), timeout=1).close()
        except OSError:
            pass
        return "Say hello as \\boxed{hello}.", {}

    def step(self, action):
        ok = bool(re.search(r"\\boxed\{hello\}", action))
        return ("Hi." if ok else "Hm."), (1.0 if ok else 0.0), True, False, {}
