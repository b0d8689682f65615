import json
from typing import Tuple


class StockTotalEnv(ToolUseBaseEnv):
    """One task: add up the stock of two items, read through a lookup tool."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._call_history = []
        self._state = {"stock": {"bolt": 12, "nut": 30, "washer": 7}}
        self._tools = {
            "get_stock": {
                "description": "Units in stock of one item.",
                "parameters": {"type": "object", "properties": {"item": {"type": "string"}}, "required": ["item"]},
            },
            "list_items": {"description": "Names of every item."},
        }
        self._expected_answer = "42"
        return "How many bolts and nuts are in stock together? Reply with <answer>N</answer>.", {}

    def solution(self) -> str:
        return '<tool_call>{"name": "get_stock", "arguments": {"item": "bolt"}}</tool_call>\n' \
               '<tool_call>{"name": "get_stock", "arguments": {"item": "nut"}}</tool_call>\n<answer>42</answer>'

    def tool_get_stock(self, item: str) -> str:
        return str(self._state["stock"][item])

    def tool_list_items(self) -> str:
        return json.dumps(sorted(self._state["stock"]))
