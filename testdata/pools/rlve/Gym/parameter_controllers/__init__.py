from Gym.parameter_controllers.sum_list import SumList_ParameterController
from Gym.parameter_controllers.largest_value import LargestValue_ParameterController
from Gym.parameter_controllers.uses_sibling import UsesSibling_ParameterController

identifier2controller = {
    "SumList" : SumList_ParameterController,
    "LargestValue" : LargestValue_ParameterController,
    "UsesSibling" : UsesSibling_ParameterController,
}
