from typing import Tuple


class ShelfEnv(ToolUseBaseEnv):
    """Two scheduled steps whose criteria read state that reset builds."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._state = {"shelf": ["atlas"], "loaned": []}
        self._tools = {
            "add_book": {"description": "Put a book on the shelf.", "parameters": {
                "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}},
            "loan_book": {"description": "Loan a book from the shelf.", "parameters": {
                "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}},
        }
        self._user_messages = ["Add 'dune' to the shelf.", "Loan 'atlas'."]
        self._message_criteria = [
            lambda s: "dune" in s["shelf"],
            lambda s: "atlas" in s["loaned"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        return self._user_messages[0], {}

    def _advance_if_done(self) -> str:
        while self._current_msg < len(self._message_criteria) and self._message_criteria[self._current_msg](self._state):
            self._current_msg += 1
        if self._current_msg >= len(self._user_messages):
            return "\n\n[ALL STEPS COMPLETE] Submit <answer>done</answer>."
        return "\n\n[NEXT] " + self._user_messages[self._current_msg]

    def _check_answer(self, answer: str) -> bool:
        return answer.strip() == "done" and self._current_msg >= len(self._user_messages)

    def solution(self) -> str:
        return "add_book(dune); loan_book(atlas); <answer>done</answer>"

    def tool_add_book(self, title: str) -> str:
        self._state["shelf"].append(title)
        return "added " + title + self._advance_if_done()

    def tool_loan_book(self, title: str) -> str:
        self._state["shelf"].remove(title)
        self._state["loaned"].append(title)
        return "loaned " + title + self._advance_if_done()
