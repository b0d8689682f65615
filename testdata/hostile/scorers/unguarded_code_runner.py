"""Runs one candidate program against its tests, loaded into the sandbox as an env program.

The class below is the "env" the sandbox loads (internal/sandbox needs one class with reset and step);
Go calls its run() method through Env.Eval. Each test runs the candidate in a child process of its own
(os.fork, a new process group, rlimits), stdin from a memfd, stdout to a pipe read with a byte cap and a
deadline; the child's group is killed after every test. The first failing test ends the run, so a
program that loops costs one timeout, not one per test. Standard library only.
"""
import json
import os
import resource
import select
import signal
import sys
import time


def compare_stdout(got: str, want: str) -> bool:
    """Whitespace-normalised line comparison (trailing spaces and trailing blank lines ignored)."""
    def lines(s: str) -> list:
        out = [ln.rstrip() for ln in s.strip().splitlines()]
        return out
    if lines(got) == lines(want):
        return True
    return got.split() == want.split()


def compare_value(got: str, want: str) -> bool:
    """Functional tests: the printed JSON return value against the expected JSON."""
    try:
        return json.loads(got) == json.loads(want)
    except ValueError:
        return got.strip() == want.strip()


def child(program: str, test: dict, func_name: str, cpu_seconds: int, stdin_fd: int, out_fd: int) -> None:
    """In the forked child: limits, fds, then the candidate. Never returns."""
    try:
        os.setpgid(0, 0)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        module = {"__name__": "__main__", "__builtins__": __builtins__}
        code = compile(program, "<solution>", "exec")
        if test.get("testtype") == "functional":
            module["__name__"] = "solution"
            exec(code, module)
            target = module.get("Solution")
            fn = getattr(target(), func_name) if target is not None else module[func_name]
            args = [json.loads(line) for line in test["input"].split("\n") if line.strip()]
            sys.stdout.write(json.dumps(fn(*args)))
        else:
            exec(code, module)
        sys.stdout.flush()
        os._exit(0)
    except SystemExit as e:
        try:
            sys.stdout.flush()
        except BaseException:  # noqa: BLE001
            pass
        os._exit(0 if e.code in (None, 0) else 1)
    except BaseException:  # noqa: BLE001 - the candidate may raise anything
        os._exit(1)


def run_one(program: str, test: dict, func_name: str, timeout: float, output_cap: int) -> str:
    """Runs one test; returns "" when it passed, else why it failed."""
    stdin_fd = os.memfd_create("stdin")
    os.write(stdin_fd, test["input"].encode("utf-8"))
    os.lseek(stdin_fd, 0, os.SEEK_SET)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        child(program, test, func_name, max(1, int(timeout + 0.999)), stdin_fd, write_fd)
    os.close(write_fd)
    os.close(stdin_fd)
    try:
        os.setpgid(pid, pid)
    except OSError:
        pass
    chunks, size, why = [], 0, ""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            why = "timeout"
            break
        ready, _, _ = select.select([read_fd], [], [], left)
        if not ready:
            why = "timeout"
            break
        data = os.read(read_fd, 65536)
        if not data:
            break
        size += len(data)
        if size > output_cap:
            why = "output over %d bytes" % output_cap
            break
        chunks.append(data)
    os.close(read_fd)
    for target in (-pid, pid):
        try:
            os.kill(target, signal.SIGKILL)
        except OSError:
            pass
    _, status = os.waitpid(pid, 0)
    if why:
        return why
    if os.WIFSIGNALED(status):
        return "killed by signal %d" % os.WTERMSIG(status)
    if os.WEXITSTATUS(status) != 0:
        return "runtime error (exit %d)" % os.WEXITSTATUS(status)
    got = b"".join(chunks).decode("utf-8", "replace")
    same = compare_value if test.get("testtype") == "functional" else compare_stdout
    return "" if same(got, test["output"]) else "wrong output"


class CodeRunner:
    """The sandbox's env class: reset and step are unused; run is called through Eval."""

    def reset(self, seed):
        return ""

    def step(self, action):
        return "", 0.0, True, {}

    def run(self, program: str, tests: list, func_name: str, timeout: float, budget: float, output_cap: int) -> dict:
        """Runs tests in order until one fails or the budget (seconds) is spent."""
        began = time.monotonic()
        for i, test in enumerate(tests):
            left = budget - (time.monotonic() - began)
            if left <= 0.05:
                return {"passed": i, "failed": i, "why": "time budget spent"}
            why = run_one(program, test, func_name, min(timeout, left), output_cap)
            if why:
                return {"passed": i, "failed": i, "why": why}
        return {"passed": len(tests), "failed": -1, "why": ""}
