import re
from typing import Tuple


class EchoEnv:
    """No base class and no tools: it reads the whole answer itself, as a tools env without tools does."""

    def __init__(self, max_turns: int = 5):
        self.max_turns = max_turns
        self.turns = 0

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turns = 0
        return "Say the word 'ready' inside <answer></answer>.", {}

    def step(self, action: str):
        self.turns += 1
        found = re.search(r"<answer>(.*?)</answer>", action, re.DOTALL)
        if found and found.group(1).strip().lower() == "ready":
            return "Correct!", 1.0, True, False, {}
        return "Not yet.", 0.0, False, self.turns >= self.max_turns, {}
