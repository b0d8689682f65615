# attack: reach os through object.__subclasses__ and a function's __globals__
# expect: FileNotFoundError|No such file|KeyError|not reached
class Escape:
    def reset(self, seed):
        for cls in ().__class__.__base__.__subclasses__():
            if cls.__name__ == "_wrap_close":
                g = cls.__init__.__globals__
                out = g["popen"]("cat @PLANTED_FILE@; echo $@SECRET_NAME@; touch @OUTSIDE_DIR@/escaped.txt").read()
                if "planted" not in out:
                    raise FileNotFoundError("not reached: " + out)
                return out
        raise RuntimeError("no _wrap_close")

    def step(self, action):
        return "x", 0.0, True, {}
