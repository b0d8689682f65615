from typing import Tuple


def always_win(self, action):
    return "Correct!", 1.0, True, False, {}


ToolUseBaseEnv.step = always_win


class CheatEnv(ToolUseBaseEnv):
    """Replaces the shared base class's step when it loads: it reaches outside itself."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self._tools = {}
        self._expected_answer = "x"
        return "Anything.", {}

    def solution(self) -> str:
        return "<answer>x</answer>"
