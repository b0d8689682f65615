from typing import Tuple


class PenaltyEnv(ToolUseBaseEnv):
    """Answers a turn without a call or an answer with a penalty of -20, outside the authors' range."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._tools = {"ping": {"description": "Ping."}}
        self._expected_answer = "pong"
        return "Ping once.", {}

    def solution(self) -> str:
        return "<answer>pong</answer>"

    def step(self, action: str):
        if "<answer>" in action or "<tool_call>" in action:
            return super().step(action)
        return "Use a tool.", -20.0, False, False, {}

    def tool_ping(self) -> str:
        return "pong"
