import json
from typing import Tuple


class StrictEnv(ToolUseBaseEnv):
    """Overrides step to read every turn as JSON: the validation's \\boxed{1} makes it raise."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._tools = {"ping": {"description": "Ping."}}
        self._expected_answer = "pong"
        return "Ping once.", {}

    def solution(self) -> str:
        return '<tool_call>{"name": "ping", "arguments": {}}</tool_call>'

    def step(self, action: str):
        call = json.loads(action)
        return str(call), 0.0, False, False, {}

    def tool_ping(self) -> str:
        return "pong"
