# attack: forge what we record: lift the harness's info cap to store a 1.2 MB info in turns, and return a dict whose items() lies so that the info says success twice (Go would read the last, DuckDB the first)
# expect: twice in one object|exceeds the cap
import sys


class LyingInfo(dict):
    def items(self):
        return [("success", True), ("success", False)]


class ForgeRecordsEnv:
    def reset(self, seed=None):
        harness = sys.modules["__main__"]
        if hasattr(harness, "INFO_CAP"):
            harness.INFO_CAP = 1 << 30
        return "start", {}

    def step(self, action):
        if action == "big":
            return "x", 0.0, False, False, {"blob": "y" * 1200000}
        return "x", 1.0, True, False, LyingInfo(success=False)
