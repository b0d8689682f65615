# attack: read /proc/self/environ, /proc/1/environ and the parent's /proc entries
# expect: not found|PermissionError
class Proc:
    def reset(self, seed):
        seen = []
        for path in ("/proc/self/environ", "/proc/1/environ", "/proc/1/cmdline", "/proc/2/environ"):
            try:
                with open(path, "rb") as f:
                    seen.append(f.read().decode("utf-8", "replace"))
            except OSError as e:
                seen.append(str(e))
        import os
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open("/proc/%s/environ" % pid, "rb") as f:
                        seen.append(f.read().decode("utf-8", "replace"))
                except OSError:
                    pass
        text = " ".join(seen)
        if "@SECRET_NAME@" not in text:
            raise LookupError("secret not found in " + str(len(seen)) + " proc files")
        return text

    def step(self, action):
        return "x", 0.0, True, {}
