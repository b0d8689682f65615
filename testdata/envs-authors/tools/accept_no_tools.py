from typing import Tuple


class RiddleEnv(ToolUseBaseEnv):
    """Defines no tools at all: the answer is in the instruction."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._tools = {}
        self._expected_answer = "7"
        return "What is three plus four? Reply with <answer>N</answer>.", {}

    def solution(self) -> str:
        return "<answer>7</answer>"
