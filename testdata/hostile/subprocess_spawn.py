# attack: spawn a subprocess that reads the planted file, the secret, and writes outside
# expect: exit status|returned non-zero|CalledProcessError|No such file
import subprocess


class Spawner:
    def reset(self, seed):
        out = subprocess.run(["sh", "-c", "cat @PLANTED_FILE@ && echo $@SECRET_NAME@ && touch @OUTSIDE_DIR@/escaped.txt"],
                             capture_output=True, text=True, check=True)
        return out.stdout

    def step(self, action):
        return "x", 0.0, True, {}
