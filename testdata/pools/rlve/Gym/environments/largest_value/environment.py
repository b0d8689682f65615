import random
from array import array
from typing import Optional

from Gym.environment import (
    VerifiableEnvironment,
)


class LargestValue_Environment(VerifiableEnvironment):
    """Name the largest of N numbers (imports array, outside spade's default allowlist)."""

    def _generate(self) -> None:
        N = self.parameter["N"]
        values = array("i", random.sample(range(10, 100), N))
        self.parameter["values"] = list(values)
        self.parameter["gold_answer"] = max(values)

    def _prompt_generate(self) -> str:
        return "Largest of: " + " ".join(map(str, self.parameter["values"]))

    def _process(self, answer: Optional[str]) -> Optional[int]:
        try:
            return int(answer) if answer is not None else None
        except ValueError:
            return None

    def scorer(self, output: str) -> float:
        value = self.processor(output)
        if value is None:
            return -1.0
        return 1.0 if value == self.parameter["gold_answer"] else -0.5
