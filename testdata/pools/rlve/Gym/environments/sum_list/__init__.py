from .environment import SumList_Environment
