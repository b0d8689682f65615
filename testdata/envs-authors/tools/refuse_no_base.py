from typing import Tuple


class OrphanEnv:
    """Forgets to derive from ToolUseBaseEnv: it has no step() and no tools()."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self._tools = {"ping": {"description": "Ping."}}
        return "Ping once.", {}

    def solution(self) -> str:
        return "<answer>pong</answer>"

    def tool_ping(self) -> str:
        return "pong"
