"""Run one numpy hostile program the way the fork server does, with no confinement: the program
loaded once with the real builtins and real numpy, each episode a forked child. Prints one JSON line
with each episode's reset observation and step results (or its error), for a test to judge whether the
attack reached its goal.

usage: unconfined_numpy.py PROGRAM EPISODES [ACTION...]"""
import json
import os
import sys


def episode(cls, action: str) -> dict:
    env = cls()
    obs, info = env.reset(seed=0)
    out = {"obs": obs, "info": info}
    if action:
        step = env.step(action)
        out["step_obs"], out["step_info"] = step[0], step[-1]
    return out


def main() -> None:
    path, episodes, actions = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    workdir = os.path.dirname(os.path.abspath(path))
    os.chdir(workdir)
    module = {"__name__": "env"}
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), module)
    cls = next(v for k, v in module.items() if isinstance(v, type) and hasattr(v, "reset") and hasattr(v, "step"))
    results = []
    for i in range(episodes):
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            try:
                res = episode(cls, actions[i] if i < len(actions) else "")
            except BaseException as e:  # noqa: BLE001
                res = {"error": "%s: %s" % (type(e).__name__, e)}
            os.write(w, json.dumps(res).encode())
            os._exit(0)
        os.close(w)
        data = b""
        while chunk := os.read(r, 65536):
            data += chunk
        os.close(r)
        os.waitpid(pid, 0)
        results.append(json.loads(data))
    print(json.dumps(results))


if __name__ == "__main__":
    main()
