from typing import Tuple


class PriceEnv(ToolUseBaseEnv):
    """A price with a currency sign; its own turn budget of 3 (the constructor's default)."""

    def __init__(self, max_turns: int = 3, **kwargs):
        super().__init__(max_turns=max_turns, **kwargs)

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._tools = {"quote": {"description": "The price of the plan.", "parameters": {"type": "object", "properties": {}}}}
        self._state = {"price": 1234.5}
        self._expected_answer = "$1,234.50"
        return "What does the plan cost?", {}

    def solution(self) -> str:
        return "<answer>$1,234.50</answer>"

    def tool_quote(self) -> str:
        return "%.2f" % self._state["price"]
