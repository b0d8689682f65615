# attack: read a file the test planted outside the sandbox
# expect: FileNotFoundError|PermissionError
class Reader:
    def reset(self, seed):
        return open("@PLANTED_FILE@").read()

    def step(self, action):
        return "x", 0.0, True, {}
