import os
from typing import Tuple


class ShellEnv(ToolUseBaseEnv):
    """A tool that lists a real directory: it reaches outside itself."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self._tools = {"ls": {"description": "List a directory."}}
        self._expected_answer = "0"
        return "List /.", {}

    def solution(self) -> str:
        return "<answer>0</answer>"

    def tool_ls(self) -> str:
        return ",".join(os.listdir("/"))
