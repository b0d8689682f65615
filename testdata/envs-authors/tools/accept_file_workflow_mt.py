import random
from typing import Tuple


class FileWorkflowEnv(ToolUseBaseEnv):
    """Three instructions in turn; each tool reports the next one once the pending one holds."""

    def reset(self, seed=None) -> Tuple[str, dict]:
        self.turn_count = 0
        self._call_history = []
        rng = random.Random(seed)
        self._state = {"files": {"a.txt": "draft", "b.txt": "notes"}, "archive": []}
        self._tools = {
            "create_file": {"description": "Create a file.", "parameters": {
                "type": "object", "properties": {"name": {"type": "string"}, "text": {"type": "string"}},
                "required": ["name", "text"]}},
            "archive_file": {"description": "Move a file to the archive.", "parameters": {
                "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
            "delete_file": {"description": "Delete a file.", "parameters": {
                "type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
        }
        self._user_messages = [
            "Create report.txt containing 'ok'.",
            "Archive a.txt.",
            "Delete b.txt.",
        ]
        self._criteria = [
            lambda s: s["files"].get("report.txt") == "ok",
            lambda s: "a.txt" in s["archive"],
            lambda s: "b.txt" not in s["files"],
        ]
        self._current_msg = 0
        self._expected_answer = "done"
        self._noise = rng.random()
        return self._user_messages[0], {}

    def _advance_if_done(self) -> str:
        if self._current_msg >= len(self._user_messages):
            return ""
        if self._criteria[self._current_msg](self._state):
            self._current_msg += 1
            if self._current_msg >= len(self._user_messages):
                return "\n\n[ALL STEPS COMPLETE] Submit <answer>done</answer>."
            return "\n\n[NEXT] " + self._user_messages[self._current_msg]
        return ""

    def _check_answer(self, answer: str) -> bool:
        return answer.strip().lower() == "done" and self._current_msg == len(self._user_messages)

    def solution(self) -> str:
        return "create_file(report.txt, ok); archive_file(a.txt); delete_file(b.txt); <answer>done</answer>"

    def tool_create_file(self, name: str, text: str) -> str:
        self._state["files"][name] = text
        return "created " + name + self._advance_if_done()

    def tool_archive_file(self, name: str) -> str:
        if name not in self._state["files"]:
            raise ValueError("no file " + name)
        del self._state["files"][name]
        self._state["archive"].append(name)
        return "archived " + name + self._advance_if_done()

    def tool_delete_file(self, name: str) -> str:
        self._state["files"].pop(name)
        return "deleted " + name + self._advance_if_done()
