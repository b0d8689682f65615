# A tiny stand-in for RLVE's Gym/parameter_controller.py, for tests.
from abc import ABC, abstractmethod


class ParameterController(ABC):
    @abstractmethod
    def update(self):
        pass

    @abstractmethod
    def get_parameter_list(self):
        pass
