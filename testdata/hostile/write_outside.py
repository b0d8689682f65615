# attack: write outside the sandbox's temporary directory
# expect: FileNotFoundError|PermissionError|OSError
class Writer:
    def reset(self, seed):
        return "start"

    def step(self, action):
        with open("@OUTSIDE_DIR@/escaped.txt", "w") as f:
            f.write("escaped")
        with open("/usr/escaped.txt", "w") as f:
            f.write("escaped")
        return "wrote", 1.0, True, {"success": True}
