"""Runs a candidate program on one test's input, loaded into the sandbox as an env program.

The class below is the "env" the sandbox loads (internal/sandbox needs one class with reset and step);
Go calls its run() method through Env.Eval, once per test, each on a fresh instance, and compares what
the program printed with the expected output itself: the expected output never enters the sandbox,
and an instance holds one test's input only.

run() forks the candidate into a process of its own: a new session, rlimits, stdin from a memfd of the
input, stdout to a pipe read with a byte cap and a deadline, stderr to /dev/null, every other
descriptor closed (the instance's socket to Go among them). The instance is a child subreaper, so every
process the candidate starts, daemons included, stays below it; once the test ends all of them are
killed and reaped before run() replies. The output comes back in base64 chunks that fit an eval result
(chunk() for the rest). Standard library only.
"""
import base64
import ctypes
import json
import os
import resource
import select
import signal
import sys
import time

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36
CHUNK = 32 << 10  # raw bytes per reply; base64 keeps a reply under the sandbox's 64 KiB result cap

_libc = None


def prctl(option: int, arg: int) -> None:
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
    if _libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(%d, %d)" % (option, arg))


def child(program: str, functional: bool, args_text: str, func_name: str, cpu_seconds: int, stdin_fd: int, out_fd: int) -> None:
    """In the forked child: session, limits, fds, then the candidate. Never returns."""
    try:
        os.setsid()
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(devnull, 2)
        close_fds(3)
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        module = {"__name__": "__main__", "__builtins__": __builtins__}
        code = compile(program, "<solution>", "exec")
        del program
        if functional:
            module["__name__"] = "solution"
            exec(code, module)
            target = module.get("Solution")
            fn = getattr(target(), func_name) if target is not None else module[func_name]
            args = [json.loads(line) for line in args_text.split("\n") if line.strip()]
            del args_text
            sys.stdout.write(json.dumps(fn(*args)))
        else:
            del args_text
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


def close_fds(low: int, keep: int = -1) -> None:
    """Close every open descriptor from low up but keep (as listed by /proc/self/fd: one listing, where
    closing every possible number would cost a syscall each when close_range is refused)."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd >= low and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def children() -> list:
    """The pids whose parent is this process (the candidate and, once orphaned, what it started)."""
    me, out = os.getpid(), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name, "rb") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1 and int(fields[1]) == me:
            out.append(int(name))
    return out


def kill_tree(first: int) -> int:
    """Kill and reap every descendant (orphans come to us, the subreaper); returns the candidate's
    wait status."""
    status = None
    for _ in range(100000):
        kids = children()
        for pid in kids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            pid, st = os.waitpid(-1, 0 if kids else os.WNOHANG)
        except ChildProcessError:
            break
        if pid == first:
            status = st
        if pid == 0 and not kids:
            time.sleep(0.001)  # a child between fork and /proc: look again
    else:
        raise RuntimeError("the candidate's processes could not all be killed")
    return status if status is not None else 9


class CodeRunner:
    """The sandbox's env class: reset and step are unused; run and chunk are called through Eval."""

    def __init__(self):
        self.out = b""
        prctl(PR_SET_CHILD_SUBREAPER, 1)

    def reset(self, seed):
        return ""

    def step(self, action):
        return "", 0.0, True, {}

    def run(self, program: str, stdin: str, testtype: str, func_name: str, timeout: float, output_cap: int) -> dict:
        """Runs program on one input: {"status": "exit"|"signal"|"timeout"|"output", "code": n,
        "size": bytes printed, "chunk": the first CHUNK bytes in base64}."""
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        stdin_fd = os.memfd_create("stdin")
        os.write(stdin_fd, stdin.encode("utf-8"))
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        read_fd, write_fd = os.pipe()
        functional = testtype == "functional"
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            child(program, functional, stdin if functional else "", func_name, max(1, int(timeout + 0.999)), stdin_fd, write_fd)
        os.close(write_fd)
        os.close(stdin_fd)
        del program, stdin
        chunks, size, why = [], 0, ""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                why = "timeout"
                break
            data = os.read(read_fd, 65536)
            if not data:
                break
            size += len(data)
            if size > output_cap:
                why = "output"
                break
            chunks.append(data)
        os.close(read_fd)
        status = None
        while not why:  # the output ended: the candidate has what is left of its time to exit
            done, st = os.waitpid(pid, os.WNOHANG)
            if done:
                status = st
            elif time.monotonic() >= deadline:
                why = "timeout"
            else:
                time.sleep(0.0005)
                continue
            break
        left = kill_tree(pid)  # the candidate when it still runs, and whatever it started
        if status is None:
            status = left
        self.out = b"".join(chunks)
        if why:
            return {"status": why, "code": 0, "size": size, "chunk": ""}
        if os.WIFSIGNALED(status):
            return {"status": "signal", "code": os.WTERMSIG(status), "size": len(self.out), "chunk": ""}
        return {"status": "exit", "code": os.WEXITSTATUS(status), "size": len(self.out),
                "chunk": base64.b64encode(self.out[:CHUNK]).decode("ascii")}

    def chunk(self, offset: int) -> str:
        """The output from offset, at most CHUNK bytes, in base64."""
        offset = int(offset)
        return base64.b64encode(self.out[offset:offset + CHUNK]).decode("ascii")
