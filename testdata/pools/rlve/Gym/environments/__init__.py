from Gym.environments.sum_list import SumList_Environment
from Gym.environments.largest_value import LargestValue_Environment
from Gym.environments.uses_sibling import UsesSibling_Environment

identifier2environment = {
    "SumList" : SumList_Environment,
    "LargestValue" : LargestValue_Environment,
    "UsesSibling" : UsesSibling_Environment,
}
