import random
from typing import Tuple


class TicketEnv(ToolUseBaseEnv):
    """Draws its ticket number without the seed, so two resets with one seed differ."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._state = {"ticket": random.randint(1000, 9999)}
        self._tools = {"open_ticket": {"description": "The number of the open ticket."}}
        self._expected_answer = str(self._state["ticket"])
        return "Desk %d asks: which ticket is open? Reply with <answer>NUMBER</answer>." % random.randint(1, 99), {}

    def solution(self) -> str:
        return '<tool_call>{"name": "open_ticket", "arguments": {}}</tool_call>\n<answer>%s</answer>' % self._expected_answer

    def tool_open_ticket(self) -> str:
        return str(self._state["ticket"])
