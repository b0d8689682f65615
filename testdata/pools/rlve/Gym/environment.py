# A tiny stand-in for RLVE's Gym/environment.py, for tests: spade's importer does not read this file
# (the wrapper program brings its own base class), it only checks that it is there.
from abc import ABC, abstractmethod


class VerifiableEnvironment(ABC):
    def __init__(self, answer_markers=None):
        self.seed = None
        self.parameter = None
        self.answer_markers = answer_markers or ("<answer>", "</answer>")
        self.passing_reward_threshold = 1.0

    @abstractmethod
    def _generate(self):
        pass
