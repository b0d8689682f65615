from typing import Tuple


class LedgerEnv(ToolUseBaseEnv):
    """Uses the names the loader injects (defaultdict, deque) without importing them."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._state = {"ledger": defaultdict(int), "log": deque(maxlen=3)}
        self._state["ledger"]["rent"] = 900
        self._tools = {"balance": {"description": "Amount booked under a category.", "parameters": {
            "type": "object", "properties": {"category": {"type": "string"}}, "required": ["category"]}}}
        self._expected_answer = "900"
        return "How much is booked under rent?", {}

    def solution(self) -> str:
        return "<answer>900</answer>"

    def tool_balance(self, category: str) -> str:
        self._state["log"].append(category)
        return str(self._state["ledger"][category])
