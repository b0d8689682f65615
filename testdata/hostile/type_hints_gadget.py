# attack: turn a string into code with the real builtins: typing.get_type_hints evaluates a string annotation in the module's globals, so "exec(src, box)" runs a program text the static check never saw as code (os, open, the environment)
# expect: FileNotFoundError|PermissionError|KeyError|is not defined
import typing

src = "import o" + "s\nRESULT.append(o" + "s.environ['@SECRET_NAME@'] + open('@PLANTED_FILE@').read())"
RESULT = []
box = {"RESULT": RESULT}


def probe(x: "exec(src, box)"):
    return x


class TypeHintsEnv:
    def reset(self, seed=None):
        typing.get_type_hints(probe)
        return "got " + RESULT[-1], {}

    def step(self, action):
        return "x", 0.0, True, False, {}
