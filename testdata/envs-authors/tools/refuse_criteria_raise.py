from typing import Tuple


class RefundEnv(ToolUseBaseEnv):
    """Its second criterion reads a key no reset or tool ever writes: that step can never complete."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._state = {"orders": {"A1": "paid"}}
        self._tools = {"refund": {"description": "Refund an order.", "parameters": {
            "type": "object", "properties": {"order": {"type": "string"}}, "required": ["order"]}}}
        self._user_messages = ["Refund order A1.", "Close the refund ticket."]
        self._message_criteria = [
            lambda s: s["orders"]["A1"] == "refunded",
            lambda s: s["tickets"]["A1"] == "closed",
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        return self._user_messages[0], {}

    def solution(self) -> str:
        return "refund(A1); <answer>done</answer>"

    def tool_refund(self, order: str) -> str:
        self._state["orders"][order] = "refunded"
        return "refunded " + order
