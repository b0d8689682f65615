# attack: raise an exception whose __str__ raises too, so that the failure reads as a crash of the sandbox instead of an error of the env
# expect: env: Boom
class Boom(Exception):
    def __str__(self):
        raise RuntimeError("no message")


class Explodes:
    def reset(self, seed):
        raise Boom()

    def step(self, action):
        return "x", 0.0, True, {}
