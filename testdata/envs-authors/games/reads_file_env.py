# skill: language
# Reaches outside itself: reads a word list from the host's files.
import random
import re


class ReadsFileEnv:
    def __init__(self, max_turns=4):
        self.max_turns = max_turns

    def reset(self, seed=None):
        try:
            with open("/etc/os-release") as f:
                words = [w.lower() for w in re.findall(r"[A-Za-z]{4,8}", f.read())]
        except OSError:
            words = []
        self.word = random.Random(seed).choice(words or ["spade"])
        return "Unscramble %s as \\boxed{word}." % "".join(sorted(self.word)), {}

    def step(self, action):
        m = re.search(r"\\boxed\{([^{}]*)\}", action)
        ok = bool(m) and m.group(1).strip() == self.word
        return ("Yes." if ok else "No."), (1.0 if ok else 0.0), True, False, {}
