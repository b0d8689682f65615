from typing import Tuple


class BrokenEnv(ToolUseBaseEnv):
    """reset reads a key it never set: the constructor (which calls reset) raises."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self._tools = {}
        return self._state["missing"], {}

    def solution(self) -> str:
        return "<answer>x</answer>"
