import random
from typing import Optional
from Gym.environment import VerifiableEnvironment


class SumList_Environment(VerifiableEnvironment):
    prompt_template = "Add these numbers: {}\nWhat is their sum?"

    def __init__(self, wrong_format: float = -1.0, **kwargs):
        super().__init__(**kwargs)
        self.wrong_format = wrong_format

    def _generate(self) -> None:
        assert "N" in self.parameter, "N is required in parameter"
        N = self.parameter["N"]
        self.parameter["numbers"] = [random.randint(1, 9) for _ in range(N)]
        self.parameter["reference_answer"] = sum(self.parameter["numbers"])

    def _prompt_generate(self) -> str:
        return self.prompt_template.format(" ".join(map(str, self.parameter["numbers"])))

    def _process(self, answer: Optional[str]) -> Optional[int]:
        if answer is None:
            return None
        try:
            return int(answer.strip())
        except ValueError:
            return None

    def scorer(self, output: str) -> float:
        value = self.processor(output)
        if value is None:
            return self.wrong_format
        return 1.0 if value == self.parameter["reference_answer"] else 0.0
