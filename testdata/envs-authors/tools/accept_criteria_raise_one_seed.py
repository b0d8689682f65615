import random
from typing import Tuple


class DeskEnv(ToolUseBaseEnv):
    """A criterion that raises on the state of some seeds only (an empty queue): seed-dependent, kept."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        rng = random.Random(seed)
        self._state = {"queue": ["call"] * (seed % 2 if seed is not None else 1), "served": 0}
        self._tools = {"serve": {"description": "Serve the first caller in the queue."}}
        self._user_messages = ["Serve the first caller."]
        self._message_criteria = [lambda s: s["queue"][0] == "served"]
        self._current_msg = 0
        self._expected_answer = "done"
        self._noise = rng.random()
        return self._user_messages[0], {}

    def solution(self) -> str:
        return "serve(); <answer>done</answer>"

    def tool_serve(self) -> str:
        self._state["queue"][0] = "served"
        return "served"
