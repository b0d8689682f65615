from Gym.parameter_controller import ParameterController


class UsesSibling_ParameterController(ParameterController):
    def update(self) -> None:
        pass

    def get_parameter_list(self):
        return [dict(N=2)]
