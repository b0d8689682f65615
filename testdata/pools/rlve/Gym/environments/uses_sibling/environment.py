from typing import Optional
from Gym.environment import VerifiableEnvironment
from Gym.environments.sum_list import SumList_Environment


class UsesSibling_Environment(SumList_Environment):
    """Builds on another RLVE module, which a single wrapped program cannot carry."""
