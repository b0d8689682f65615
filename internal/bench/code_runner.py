"""Runs a candidate program on its tests' inputs, loaded into the sandbox as an env program.

The class below is the "env" the sandbox loads (internal/sandbox needs one class with reset and step).
Go loads it once per answer and makes one instance, calls start(program, func_name) and then run()
once per test with that test's input only, and compares what the program printed with the expected
output itself: expected outputs never enter the sandbox.

start() forks a forker before the instance has seen any input: it holds the program and nothing else,
no descriptor but its socket to the instance, and is a child subreaper. For each test the instance puts
the input in a memfd and sends the forker that memfd and the write end of a pipe; the forker forks the
candidate, which gets the memfd as stdin, the pipe as stdout, /dev/null as stderr, a session of its own
and rlimits, so it holds its own input and no other test's data. The instance reads the pipe with a byte
cap and a deadline; the forker waits for the candidate, then kills every process it started (orphans
come to the forker, the subreaper), reaps them and reports how the candidate ended. The output comes
back in base64 chunks that fit an eval result (chunk() for the rest). Standard library only.
"""
import base64
import ctypes
import json
import os
import resource
import select
import signal
import socket
import struct
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


def close_fds(low: int, keep: int = -1) -> None:
    """Close every open descriptor from low up but keep: those /proc/self/fd lists (one listing, where
    closing every possible number costs a syscall each when close_range is refused), or, where /proc
    cannot be read (the landlock layer), every number below the hard RLIMIT_NOFILE (at least 1024)."""
    try:
        fds = [int(name) for name in os.listdir("/proc/self/fd")]
    except OSError:
        fds = range(low, max(1024, min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1 << 16)))
    for fd in fds:
        if fd >= low and fd != keep:
            try:
                os.close(fd)
            except OSError:
                pass


def scope_signals() -> bool:
    """Put this process in a landlock domain of its own that scopes signals (ABI >= 6): from here on it
    and what it forks can signal only processes of this domain, its descendants. True only when that is
    proved: the parent, outside the domain, can no longer be signalled."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        sysc, c_long = libc.syscall, ctypes.c_long
        sysc.restype = c_long
        if sysc(c_long(444), None, c_long(0), c_long(1)) < 6:  # landlock_create_ruleset: the ABI version
            return False
        fd = sysc(c_long(444), ctypes.c_char_p(struct.pack("=QQQ", 0, 0, 2)), c_long(24), c_long(0))  # scoped: signal
        if fd < 0:
            return False
        try:
            prctl(38, 1)  # PR_SET_NO_NEW_PRIVS
            if sysc(c_long(446), c_long(fd), c_long(0)) != 0:  # landlock_restrict_self
                return False
        finally:
            os.close(fd)
        os.kill(os.getppid(), 0)
    except PermissionError:
        return True
    except OSError:
        return False
    return False


def candidate(program: str, functional: bool, func_name: str, cpu_seconds: int, stdin_fd: int, out_fd: int) -> None:
    """In the candidate's process: session, limits, fds, then the program. Never returns."""
    try:
        os.setsid()
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(stdin_fd, 0)
        os.dup2(out_fd, 1)
        os.dup2(devnull, 2)
        close_fds(3)
        args = []
        if functional:  # the arguments, one JSON value a line; the module still finds its stdin whole
            with open(0, "r", closefd=False) as f:
                args = [json.loads(line) for line in f.read().split("\n") if line.strip()]
            os.lseek(0, 0, os.SEEK_SET)
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


def children() -> list:
    """The pids whose parent is this process."""
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


def kill_tree(scoped: bool, group: int) -> None:
    """Kill and reap every descendant. A subreaper's orphans are its children, so any live descendant
    makes at least one live child, and none left means the tree is gone. Killed by kill(-1) where
    signals are scoped to our domain (every process in it is a descendant), else by a /proc scan for
    our children; where neither is possible (no /proc, no scoped signals) only the candidate's process
    group is killed."""
    for _ in range(100000):
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid:
            continue
        targets = [-1] if scoped else []
        if not scoped:
            try:
                targets = children()
            except OSError:
                pass
            if not targets:  # /proc cannot be read here
                try:
                    os.killpg(group, signal.SIGKILL)
                except OSError:
                    pass
                for _ in range(100):
                    try:
                        if os.waitpid(-1, os.WNOHANG)[0] == 0:
                            time.sleep(0.0001)
                    except ChildProcessError:
                        return
                return
        for target in targets:
            try:
                os.kill(target, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.waitpid(-1, 0)
        except ChildProcessError:
            return
    raise RuntimeError("the candidate's processes could not all be killed")


def forker(sock: socket.socket, program: str, func_name: str) -> None:
    """The forker's loop: one candidate per message ({"functional", "cpu", "timeout"} with the memfd
    and the pipe's write end), one reply per candidate ({"status": "exit"|"signal"|"timeout", "code"}).
    A "kill" message during a test ends the candidate's tree at once. Never returns."""
    try:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        prctl(PR_SET_CHILD_SUBREAPER, 1)
        close_fds(0, keep=sock.fileno())
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        scoped = scope_signals()
        while True:
            msg, fds, _, _ = socket.recv_fds(sock, 4096, 2)
            if not msg:
                os._exit(0)
            if msg == b"kill":  # sent for the last test as it ended by itself
                for fd in fds:
                    os.close(fd)
                continue
            req = json.loads(msg)
            if len(fds) != 2:
                os._exit(3)
            pid = os.fork()
            if pid == 0:
                candidate(program, req["functional"], func_name, req["cpu"], fds[0], fds[1])
            for fd in fds:
                os.close(fd)
            deadline, status, why, nap = time.monotonic() + req["timeout"], None, "", 0.00005
            while True:
                done, st = os.waitpid(pid, os.WNOHANG)
                if done:
                    status = st
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    why = "timeout"
                    break
                if select.select([sock], [], [], min(nap, left))[0]:
                    sock.recv(64)  # "kill" (or the instance went away)
                    why = "killed"
                    break
                nap = min(nap * 2, 0.002)
            kill_tree(scoped, pid)
            if why:
                reply = {"status": why, "code": 0}
            elif os.WIFSIGNALED(status):
                reply = {"status": "signal", "code": os.WTERMSIG(status)}
            else:
                reply = {"status": "exit", "code": os.WEXITSTATUS(status)}
            sock.sendall(json.dumps(reply).encode())
    except BaseException:  # noqa: BLE001
        os._exit(4)


class CodeRunner:
    """The sandbox's env class: reset and step are unused; start, run and chunk are called through Eval."""

    def __init__(self):
        self.out, self.sock = b"", None

    def reset(self, seed):
        return ""

    def step(self, action):
        return "", 0.0, True, {}

    def start(self, program: str, func_name: str) -> bool:
        """Fork the forker, which holds program and func_name (no test's data exists here yet)."""
        if self.sock is not None:
            raise RuntimeError("started already")
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        pid = os.fork()
        if pid == 0:
            ours.close()
            forker(theirs, str(program), str(func_name))
        theirs.close()
        self.sock = ours
        return True

    def run(self, stdin: str, testtype: str, timeout: float, output_cap: int) -> dict:
        """Runs the program on one input: {"status": "exit"|"signal"|"timeout"|"output", "code": n,
        "size": bytes printed, "chunk": the first CHUNK bytes in base64}."""
        stdin_fd = os.memfd_create("stdin")
        os.write(stdin_fd, stdin.encode("utf-8"))
        os.lseek(stdin_fd, 0, os.SEEK_SET)
        del stdin
        read_fd, write_fd = os.pipe()
        req = {"functional": testtype == "functional", "cpu": max(1, int(timeout + 0.999)), "timeout": timeout}
        socket.send_fds(self.sock, [json.dumps(req).encode()], [stdin_fd, write_fd])
        os.close(write_fd)
        os.close(stdin_fd)
        chunks, size, why, reply = [], 0, "", None
        deadline = time.monotonic() + timeout + 0.5  # the forker keeps timeout; this bounds a stuck forker
        watch = [read_fd, self.sock]
        while read_fd in watch or reply is None:
            left = deadline - time.monotonic()
            ready = select.select(watch, [], [], max(left, 0))[0] if left > 0 else []
            if not ready:
                raise RuntimeError("the forker did not report in time")
            if self.sock in ready:
                data = self.sock.recv(4096)
                if not data:
                    raise RuntimeError("the forker died")
                reply = json.loads(data)
                watch.remove(self.sock)
                if read_fd in watch:  # the tree is dead: what is in the pipe is all there is
                    deadline = min(deadline, time.monotonic() + 0.5)
            if read_fd in ready:
                data = os.read(read_fd, 65536)
                if not data:
                    watch.remove(read_fd)
                    continue
                size += len(data)
                if size > output_cap:
                    why = "output"
                    watch.remove(read_fd)
                    if reply is None:
                        self.sock.send(b"kill")
                    continue
                chunks.append(data)
        os.close(read_fd)
        self.out = b"".join(chunks)
        status = why or reply["status"]
        if status == "killed":
            status = "output"
        if status in ("timeout", "output"):
            return {"status": status, "code": 0, "size": size, "chunk": ""}
        if status == "signal":
            return {"status": "signal", "code": int(reply["code"]), "size": len(self.out), "chunk": ""}
        return {"status": "exit", "code": int(reply["code"]), "size": len(self.out),
                "chunk": base64.b64encode(self.out[:CHUNK]).decode("ascii")}

    def chunk(self, offset: int) -> str:
        """The output from offset, at most CHUNK bytes, in base64."""
        offset = int(offset)
        return base64.b64encode(self.out[offset:offset + CHUNK]).decode("ascii")
