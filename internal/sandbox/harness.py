"""spade sandbox harness: a fork server for generated environment programs.

Standard library only. It runs inside the isolation layer (bwrap or the namespace init) as an
unprivileged uid. Three kinds of process:

server    (this process, started by Go) never executes generated code. Control requests arrive
          as JSON lines on fd 3, replies leave on fd 4; fd 5 is a SOCK_SEQPACKET socket on which
          Go passes, before each spawn request, the socket the new child will talk on.
template  one per loaded program (op "spawn", mode "template"): compiles and executes the
          program once, freezes its heap, then forks one instance per {"op": "fork"} message
          that Go sends on the template's own socket together with the instance's socket.
instance  one env object: answers reset/step/tools/eval as JSON lines directly to Go, so a step
          is one hop. A "check" child parses a program for the static check and exits.

Every child closes fds 3, 4 and 5 of the server before any generated code runs: a print() or a
write to any fd in generated code cannot reach Go's control channel. Children's stdout and stderr
go to a pipe per program that the server drains and caps (op "output" returns the tail; past
the cap the whole program is killed). Whatever an instance writes on its own socket is checked
by Go like any return value (one reply line per request, matching seq, bounded size).

Control requests: {"id": N, "op": OP, ...}; replies {"id": N, "ok": true, ...} or
{"id": N, "ok": false, "error": MSG}. Instance replies: {"seq": S, "ok": true, ...} or
{"seq": S, "ok": false, "kind": KIND, "error": MSG, "trace": TB} with KIND env, memory or output.
"""

import ast
import gc
import io
import json
import math
import os
import resource
import selectors
import signal
import socket
import sys
import time
import traceback

PROTOCOL_VERSION = 1

CONFIG = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
OBS_CAP: int = CONFIG.get("obs_cap", 64 * 1024)
OUT_CAP: int = CONFIG.get("out_cap", 1024 * 1024)
OUT_KEEP: int = CONFIG.get("out_keep", 8 * 1024)
INFO_CAP: int = CONFIG.get("info_cap", 64 * 1024)
AS_BYTES: int = CONFIG.get("address_space", 1 << 30)
CPU_SECONDS: int = CONFIG.get("cpu_seconds", 60)
NOFILE: int = CONFIG.get("nofile", 256)
CHILD_NOFILE: int = CONFIG.get("child_nofile", 32)
FSIZE: int = CONFIG.get("fsize", 16 << 20)
NPROC: int = CONFIG.get("nproc", 0)
PRELOAD: list = CONFIG.get("preload", [])
GO_IN, GO_OUT, GO_FDS = 3, 4, 5
MAX_LINE = 8 * OBS_CAP + 2 * INFO_CAP + 65536
MODULE_NAME = "env_program"
SPARES: int = CONFIG.get("spares", 1)  # instances each template keeps forked ahead (each unused one is a wasted fork)


def set_limit(which: int, soft: int, hard: int) -> None:
    """Lower one rlimit; a value above the current hard limit is clamped to it."""
    _, cur_hard = resource.getrlimit(which)
    if cur_hard != resource.RLIM_INFINITY:
        soft = min(soft, cur_hard)
        hard = min(hard, cur_hard)
    resource.setrlimit(which, (soft, hard))


# ---------------------------------------------------------------- static check


def static_check(code: str, setting: str, allow: list, flagged: list, flagged_attrs: list) -> list:
    """Return the problems found in code without executing it (empty when it passes)."""
    problems = []
    try:
        tree = ast.parse(code, filename="<env>")
    except SyntaxError as e:
        return ["syntax error: line %s: %s" % (e.lineno, e.msg)]
    except (ValueError, RecursionError, MemoryError) as e:
        return ["cannot parse: %s" % (e,)]
    allowed = set(allow)
    flagged_names = set(flagged)
    flagged_attr_names = set(flagged_attrs)
    problems += env_class_problems(tree, setting)  # (defined below: line numbers above serve_instance stay)
    ok_dunders = {"__init__", "__name__", "__class__", "__main__", "__repr__", "__str__", "__eq__", "__hash__",
                  "__lt__", "__le__", "__gt__", "__ge__", "__len__", "__iter__", "__next__", "__contains__",
                  "__post_init__", "__slots__", "__doc__", "__add__", "__sub__", "__mul__"}
    attr_calls = {"getattr", "setattr", "delattr", "hasattr"}
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root not in allowed:
                    problems.append("line %d: import of %r is not allowed" % (line, alias.name))
        elif isinstance(node, ast.ImportFrom):
            root = (node.module or "").split(".")[0]
            if node.level or root not in allowed:
                problems.append("line %d: import from %r is not allowed" % (line, node.module or "."))
        elif isinstance(node, ast.Name):
            if node.id in flagged_names:
                problems.append("line %d: use of %r is not allowed" % (line, node.id))
            elif node.id.startswith("__") and node.id.endswith("__") and node.id not in ok_dunders:
                problems.append("line %d: use of %r is not allowed" % (line, node.id))
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("__") and node.attr.endswith("__") and node.attr not in ok_dunders:
                problems.append("line %d: dunder attribute %r is not allowed" % (line, node.attr))
            elif node.attr in flagged_attr_names:
                problems.append("line %d: attribute %r is not allowed" % (line, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value
            if v.startswith("__") and v.endswith("__") and len(v) > 4 and v not in ok_dunders:
                problems.append("line %d: dunder string %r is not allowed" % (line, v))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in attr_calls:
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and not name.value.startswith("_")):
                problems.append("line %d: %s() with a computed or private name is not allowed" % (line, node.func.id))
    return problems + more_static_problems(tree, allowed, flagged_names, flagged_attr_names, ok_dunders)


# ---------------------------------------------------------------- child side


class OutputTooLarge(Exception):
    """Raised in a child when an observation or info exceeds its cap."""


class CPUTimeExceeded(BaseException):
    """Raised in an instance by SIGXCPU: its soft RLIMIT_CPU is spent (the hard one kills it)."""


def on_sigxcpu(signum, frame):
    raise CPUTimeExceeded("the env used up its CPU seconds")


_dumps = json.JSONEncoder(separators=(",", ":")).encode


def child_send(sock: socket.socket, msg: dict) -> None:
    """Write one JSON line to Go (stdout is flushed first so output precedes the reply)."""
    sys.stdout.flush()
    sock.sendall(_dumps(msg).encode("utf-8") + b"\n")


def load_program(code: str, trusted: bool = False):
    """Execute the program as a module, with the injected names (INJECT) already bound the way the
    authors' loader binds them (explicit imports rebind the same objects), and return its env class
    (find_env_class: the only class with reset() and step(), else the one named ...Env)."""
    module = {"__name__": MODULE_NAME, "__builtins__": __builtins__ if not HARDEN or trusted else program_builtins()}
    # (the names are bound before the program runs, so a program may shadow any of them; only
    # modules of the static check's allowlist are injected, and its module rules apply to them)
    inject_names(module, code)
    compiled = compile(code, "<env>", "exec")
    exec(compiled, guard_imports(module, compiled))
    return find_env_class(module)





def error_reply(seq: int, e: BaseException) -> dict:
    """Map an exception raised by generated code to a typed reply."""
    kind = "env"
    if issubclass(type(e), MemoryError):  # type(): an exception's __class__ may be a property that raises
        kind = "memory"
    elif issubclass(type(e), OutputTooLarge):
        kind = "output"
    elif issubclass(type(e), CPUTimeExceeded):
        kind = "timeout"
    tb = safe_trace(e)  # never raises, not even when the exception's __str__ does
    text = "".join(tb[-6:])
    if len(text) > 4000:
        text = text[-4000:]
    return {"seq": seq, "ok": False, "kind": kind, "error": describe_exception(e), "trace": text}


_info_dumps = json.JSONEncoder(separators=(",", ":"), default=repr, allow_nan=False).encode


def check_obs(obs) -> str:
    """Validate an observation: a str within the cap, as an exact str (a subclass's __len__ may lie)."""
    if not isinstance(obs, str):
        raise TypeError("observation must be str, got %s" % type(obs).__name__)
    if len(obs := str.__str__(obs)) * 4 > OBS_CAP and (len(obs) > OBS_CAP or len(obs.encode("utf-8", "surrogatepass")) > OBS_CAP):
        raise OutputTooLarge("observation of %d characters exceeds the cap of %d bytes" % (len(obs), OBS_CAP))
    return obs if "\x00" not in obs else refuse_text("observation")


# The call of env.reset stays on line 215 of this file, in serve_instance, with no harness frame in
# between: the tracebacks of programs whose reset raised reached the Designer's regeneration prompts
# of recorded runs (testdata/sample-run-v1) as 'File "<string>", line 215, in serve_instance', and a
# replay matches those requests byte for byte (TestStaticCheckKeepsTheSamples checks it). Code added
# to the harness goes below serve_instance.
def serve_instance(sock: socket.socket, cls) -> None:
    """Serve one env instance over sock: instantiate it the authors' way (construct), say hello,
    answer ops until EOF, then call its close() (close_env). reset takes Gymnasium's (obs, info) or a
    bare obs; step Gymnasium's 5-tuple or the old 4-tuple (step_fields)."""
    reader, cpu0 = sock.makefile("rb"), 0.0  # Go measures the instance's CPU time: instance_send
    signal.signal(signal.SIGXCPU, on_sigxcpu)
    try:
        env = construct(cls)
        by_keyword = reset_takes_seed_keyword(env)
    except BaseException as e:  # noqa: BLE001 - generated code may raise anything
        instance_send(sock, cpu0, error_reply(0, e))
        return
    instance_send(sock, cpu0, {"seq": 0, "ok": True, "pid": os.getpid()})
    while True:
        line = reader.readline(MAX_LINE)
        if not line:
            return close_env(env)
        req = json.loads(line)
        seq, op = req["seq"], req["op"]
        try:
            if op == "reset":
                obs = reset_observation(env.reset(seed=int(req["seed"])) if by_keyword else env.reset(int(req["seed"])))
                instance_send(sock, cpu0, {"seq": seq, "ok": True, "obs": obs, "shape": reset_shape(env, obs)})
            elif op == "step":
                result = env.step(req["action"])
                obs, reward, terminated, truncated, info, shape = step_fields(result)
                obs = check_obs(obs)
                if isinstance(reward, bool) or not isinstance(reward, (int, float)):
                    try:
                        reward = float(reward)
                    except Exception:
                        raise TypeError("reward must be a number, got %s" % type(reward).__name__) from None
                reward = float(reward)
                if not math.isfinite(reward):
                    raise ValueError("reward must be finite, got %r" % reward)
                if info is None:
                    info = {}
                if not isinstance(info, dict):
                    raise TypeError("info must be a dict, got %s" % type(info).__name__)
                info_text = checked_info(_info_dumps(info))
                if len(info_text) > INFO_CAP:
                    raise OutputTooLarge("info of %d bytes exceeds the cap of %d" % (len(info_text), INFO_CAP))
                scratch_check()  # (the other replies pass scratch_guard in instance_send)
                sys.stdout.flush()
                sock.sendall(('{"seq":%d,"ok":true,"obs":%s,"reward":%s,"done":%s,"terminated":%s,"truncated":%s,"shape":%s,"info":%s}\n' % (
                    seq, _dumps(obs), repr(reward), _json_bool(terminated or truncated), _json_bool(terminated), _json_bool(truncated),
                    shape, info_text)).encode("utf-8"))
            elif op == "solution":
                text = str.__str__(str(env.solution()))
                if len(text) > OBS_CAP:
                    raise OutputTooLarge("solution() of %d characters exceeds the cap of %d bytes" % (len(text), OBS_CAP))
                instance_send(sock, cpu0, {"seq": seq, "ok": True, "value": text})
            elif op == "tools":
                text = json.dumps(env.tools(), default=repr, allow_nan=False)
                if len(text) > INFO_CAP:
                    raise OutputTooLarge("tools() of %d bytes exceeds the cap of %d" % (len(text), INFO_CAP))
                instance_send(sock, cpu0, {"seq": seq, "ok": True, "tools": json.loads(text)})
            elif op == "eval":
                # call a named method, used by the gate for the tools setting's success conditions
                value = getattr(env, req["method"])(*req.get("args", []))
                text = json.dumps(value, default=repr, allow_nan=False)
                if len(text) > INFO_CAP:
                    raise OutputTooLarge("result of %d bytes exceeds the cap of %d" % (len(text), INFO_CAP))
                instance_send(sock, cpu0, {"seq": seq, "ok": True, "value": json.loads(text)})
            else:
                instance_send(sock, cpu0, {"seq": seq, "ok": False, "kind": "env", "error": "unknown op %r" % op})
        except BaseException as e:  # noqa: BLE001
            instance_send(sock, cpu0, error_reply(seq, e))


def instance_send(sock: socket.socket, cpu0: float, msg: dict) -> None:
    """Send an instance's reply. It carries no CPU time: Go reads the instance's CPU seconds from the
    kernel (the sender of each reply is known to Go through SO_PASSCRED), so a program that patches
    time.process_time cannot forge them (cpu0 is unused).

    Defined after serve_instance so that the harness's line numbers in tracebacks that reach the
    Designer's regeneration prompts (and so the recorded requests that replay matches) do not move.
    The same holds for every function defined below.
    """
    child_send(sock, scratch_guard(msg))


def describe_exception(e: BaseException) -> str:
    """Say "Type: message" for an exception raised by generated code; never raises (an exception's
    __str__, or its class's __name__, is generated code too)."""
    try:
        name = type.__dict__["__name__"].__get__(type(e))
    except BaseException:  # noqa: BLE001
        name = "Exception"
    try:
        text = str.__str__(str(e))[:500]
    except BaseException:  # noqa: BLE001
        text = "<str() of the exception raised>"
    return "%s: %s" % (name, text)


def safe_trace(e: BaseException) -> list:
    """Format the traceback of e, or say it could not be formatted; never raises."""
    try:
        return [str.__str__(line) for line in traceback.format_exception(type(e), e, e.__traceback__)]
    except BaseException:  # noqa: BLE001
        return ["<the traceback could not be formatted>\n"]


# ---------------------------------------------------------------- hardening

PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS = 1, 4, 38
# False only in tests that show an attack succeeds without the hardening (Options.unhardened)
HARDEN: bool = CONFIG.get("harden", True)
# landlock's system calls have these numbers on every architecture (asm-generic and x86_64 alike)
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
SCRATCH_BASE = os.environ.get("TMPDIR") or "/tmp"  # each template and instance gets a directory below


def root_entries() -> list:
    """The entries of / (read by the server, before any domain of restrict_to); where / cannot be
    listed (the landlock layer), the system directories and the interpreter's."""
    try:
        return sorted(os.listdir("/"))
    except OSError:
        tops = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc", "dev", "proc"}
        for path in (sys.prefix, sys.base_prefix, sys.executable):
            tops.add(os.path.realpath(path).split("/")[1])
        return sorted(tops)


ROOT_ENTRIES = root_entries()
_libc = None


def libc():
    """The C library through ctypes (loaded by the server before it freezes its heap)."""
    global _libc
    if _libc is None:
        import ctypes
        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def prctl(option: int, arg: int) -> None:
    """prctl(option, arg), raising OSError when it fails."""
    import ctypes
    if libc().prctl(ctypes.c_int(option), ctypes.c_ulong(arg), ctypes.c_ulong(0), ctypes.c_ulong(0), ctypes.c_ulong(0)) != 0:
        raise OSError(ctypes.get_errno(), "prctl(%d, %d) failed" % (option, arg))


def harden_child() -> None:
    """Run in every child of the server before generated code: die with the parent (no process
    outlives the server that tracks it) and stay non-dumpable, so that no other process of the uid
    can read this one's memory (/proc/PID/mem), take its file descriptors (pidfd_getfd) or attach."""
    if HARDEN:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        prctl(PR_SET_DUMPABLE, 0)


def make_scratch(parent: str, name: str) -> str:
    """Create this process's own empty scratch directory under parent, make it the working
    directory and return it."""
    path = os.path.join(parent, name)
    os.mkdir(path, 0o700)
    os.chdir(path)
    # (TMPDIR stays: tempfile finds the base closed to writes and falls back to the working directory)
    return path


def landlock_plan() -> tuple:
    """Work out once, in the server, what restrict_to asks landlock for: (the ruleset attribute,
    its size, the rights handled, [(path, rights)] for everything outside SCRATCH_BASE), or None
    where the kernel has no landlock."""
    import ctypes
    import stat
    import struct
    sysc = libc().syscall
    sysc.restype = ctypes.c_long
    abi = sysc(ctypes.c_long(SYS_LANDLOCK_CREATE_RULESET), None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    if abi < 1:
        return None
    handled = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        handled |= 1 << 13  # refer
    if abi >= 3:
        handled |= 1 << 14  # truncate
    if abi >= 5:
        handled |= 1 << 15  # ioctl_dev
    scoped = 3 if abi >= 6 else 0  # abstract unix sockets, signals
    file_rights = 1 | 2 | 4 | (1 << 14) | (1 << 15)  # execute, write, read, truncate, ioctl_dev
    read = 1 | 4 | 8  # execute, read_file, read_dir
    base = os.path.realpath(SCRATCH_BASE)
    paths = []
    for entry in ROOT_ENTRIES:
        top = "/" + entry
        if base == top or base.startswith(top + "/"):
            continue  # the scratch base (and its tree: other processes' directories) stays closed
        rights = read | (2 | (1 << 15) if top == "/dev" else 0)
        try:
            if not stat.S_ISDIR(os.stat(top).st_mode):
                rights &= file_rights
        except OSError:
            continue
        paths.append((top, rights & handled))
    return struct.pack("=QQQ", handled, 0, scoped), 24 if scoped else 8, handled, paths


LANDLOCK_PLAN = None  # set by main


def restrict_to(own: str) -> bool:
    """Confine this process (and what it forks) with landlock: read and execute anything outside
    SCRATCH_BASE, write only /dev's devices and own; where the kernel has landlock ABI >= 6, no
    signals and no abstract unix sockets outside this process's domain either. Instances of one
    program thus cannot see or couple through each other's scratch space. Returns False where the
    kernel has no landlock (the worker still belongs to one program)."""
    if LANDLOCK_PLAN is None or not HARDEN:
        return False
    import ctypes
    import struct
    attr, size, handled, paths = LANDLOCK_PLAN
    sysc, c_long = libc().syscall, ctypes.c_long
    fd = sysc(c_long(SYS_LANDLOCK_CREATE_RULESET), ctypes.c_char_p(attr), c_long(size), c_long(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        for path, rights in paths + [(own, handled)]:
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue
            try:
                if sysc(c_long(SYS_LANDLOCK_ADD_RULE), c_long(fd), c_long(1), ctypes.c_char_p(struct.pack("=Qi", rights, pfd)), c_long(0)) != 0:
                    raise OSError(ctypes.get_errno(), "landlock_add_rule %s" % path)
            finally:
                os.close(pfd)
        prctl(PR_SET_NO_NEW_PRIVS, 1)
        if sysc(c_long(SYS_LANDLOCK_RESTRICT_SELF), c_long(fd), c_long(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(fd)
    return True


def recv_code(sock: socket.socket) -> str:
    """Receive a program's source on the child's own socket: a packet with its length in bytes,
    then packets of it. The source never passes through the server, so no later child forked from
    the server inherits it."""
    total = int(sock.recv(64))
    parts, got = [], 0
    while got < total:
        part = sock.recv(1 << 16)
        if not part:
            raise EOFError("the program's source was cut short")
        parts.append(part)
        got += len(part)
    return b"".join(parts).decode("utf-8")


def serve_template(sock: socket.socket, req: dict) -> None:
    """Receive the program on sock, load it once, then fork an instance for each fork message until EOF.
    With req["static"] (Pool.LoadChecked), the static check runs on the source first, and a program it
    refuses is never executed: the reply carries the problems and the template ends."""
    code = repaired_source(recv_code(sock))
    static, static_seconds = req.get("static"), 0.0
    if static is not None:
        began = time.perf_counter()
        problems = static_check(code, static.get("setting", "games"), static.get("allow", []), static.get("flagged", []), static.get("flagged_attrs", []))
        if problems:
            child_send(sock, {"seq": 0, "ok": True, "problems": problems})
            return
        static_seconds = time.perf_counter() - began
    own = make_scratch(SCRATCH_BASE, "p%d" % os.getpid())
    restrict_to(own)
    limit_file_size()
    try:
        handlers, seal, std = signal_handlers(), SEAL, (sys.stdout, sys.stderr, sys.stdin)
        cls = load_program(code, req.get("trusted", False))  # (trusted: a program of spade's own, Pool.LoadTrusted)
        del code
        template_problems(handlers)  # no thread, child or signal handler of the program outlives its load
        # nor a change to the harness's functions, state or modules (harness_seal; checked through the
        # objects bound before the program ran, never through a global the program could rebind)
        if seal and (seal[0].__code__ is not seal[1] or seal[0].__defaults__ is not seal[2]):
            raise TemplateTainted("the program changed the harness's own functions when it loaded")
        seal and seal[0](seal, std)
        if scratch_usage(own, SCRATCH_BYTES) > SCRATCH_BYTES:  # (before any instance dir exists below own)
            wipe(own)
            raise ScratchFull("the program wrote more than %d bytes to its scratch directory when it loaded "
                              "(sandbox.Options.ScratchBytes)" % SCRATCH_BYTES)
    except BaseException as e:  # noqa: BLE001
        child_send(sock, error_reply(0, e))
        return
    child_send(sock, {"seq": 0, "ok": True, "class": cls.__name__, "has_tools": callable(getattr(cls, "tools", None)), "pid": os.getpid(),
                      "static_seconds": static_seconds})
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # instances are reaped by the kernel
    gc.collect()
    gc.freeze()
    spares = [fork_spare(cls) for _ in range(SPARES)]
    while True:
        try:
            _, fds, _, _ = socket.recv_fds(sock, 256, 1)
        except InterruptedError:
            continue
        if not fds:
            return
        # hand the socket to the waiting spare, then fork the next spare while Go talks to it
        spare = spares.pop(0)
        try:
            socket.send_fds(spare, [b"go"], fds)
        except OSError:
            pass
        os.close(fds[0])
        spare.close()
        spares.append(fork_spare(cls))


def fork_spare(cls) -> socket.socket:
    """Fork an instance process that waits, already set up and warm, for its socket.

    Forking ahead takes the fork and the first-touch page copies off the critical path: a new
    episode then costs a message and the class's __init__.
    """
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    sys.stdout.flush()  # unflushed output would otherwise be repeated by every instance
    pid = os.fork()
    if pid == 0:
        code_ = 0
        try:
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            os.dup2(theirs.fileno(), 4, inheritable=False)
            os.closerange(5, CHILD_NOFILE + 16)
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
            scratch = make_scratch(os.getcwd(), "i%d" % os.getpid())
            restrict_to(scratch)
            limit_scratch(scratch)
            ctl = socket.socket(fileno=4)
            # warm the paths every instance runs, so their pages are copied now, not in reset
            json.loads(_dumps({"seq": 0, "op": "reset", "seed": 0, "ok": True, "obs": "", "info": {}}))
            _, fds, _, _ = socket.recv_fds(ctl, 16, 1)
            if not fds:
                os._exit(0)
            os.dup2(fds[0], 3, inheritable=False)
            os.close(fds[0])
            ctl.close()
            serve_instance(socket.socket(fileno=3), cls)
            wipe(scratch)
        except BaseException:  # noqa: BLE001
            code_ = 70
            print_failure()
        finally:
            try:
                sys.stdout.flush()
            except BaseException:  # noqa: BLE001
                pass
            os._exit(code_)
    theirs.close()
    return ours


DUNDER = None  # re.compile(r"__\w+__"), once
FORMATTER_ATTRS = {"Formatter", "get_field", "get_value", "vformat", "convert_field", "format_field"}


def more_static_problems(tree, allowed: set, flagged_names: set, flagged_attrs: set, ok_dunders: set) -> list:
    """The static check's rules that need more than a name lookup, beside static_check's: dunder names
    anywhere in a string, attribute paths of format fields ("{0.__globals__}", "{0.f_globals}"),
    match-class keyword patterns, getattr/setattr/delattr/hasattr used as a value (an alias) or
    with a flagged name, string.Formatter, star imports, numpy's allow_pickle, and private or flagged attributes of modules (random._os,
    typing.sys), including a chain that reaches a module outside the allowlist (dataclasses.inspect).
    One layer among several: computed strings and names get past any static check."""
    import re
    import types
    import _string
    global DUNDER
    if DUNDER is None:
        DUNDER = re.compile(r"__\w+__")
    problems = []
    numpy_named = any(isinstance(n, ast.Name) and n.id in ("np", "numpy") for n in ast.walk(tree)) or any(
        (isinstance(n, ast.Import) and any(a.name.partition(".")[0] == "numpy" for a in n.names))
        or (isinstance(n, ast.ImportFrom) and (n.module or "").partition(".")[0] == "numpy") for n in ast.walk(tree))
    if numpy_named and "numpy" in allowed and "numpy" not in sys.modules:
        try:  # the numpy rules follow attribute chains through the module objects (numpy_attr_problem)
            __import__("numpy")
        except ImportError:
            pass
    attr_calls = {"getattr", "setattr", "delattr", "hasattr"}
    called = {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    modules = {}  # name bound by an import -> the module object when preloaded, else None

    import builtins
    # the flagged names that name modules (sys, os, ...), not builtins (re.compile is fine)
    flagged_modules = {n for n in flagged_names if not hasattr(builtins, n)}

    def bad_attr(name: str) -> bool:
        return name.startswith("_") or name in flagged_attrs or name in flagged_modules or name in FORMATTER_ATTRS

    def check_format(text: str, line: int, depth: int = 0) -> None:
        try:
            parsed = list(_string.formatter_parser(text))
        except (ValueError, TypeError):
            return
        for _, field, spec, _ in parsed:
            if field:
                try:
                    _, rest = _string.formatter_field_name_split(field)
                    keys = [key for _, key in rest]
                except (ValueError, TypeError):
                    keys = []
                for key in keys:
                    if isinstance(key, str) and bad_attr(key):
                        problems.append("line %d: format field %r reaches %r, which is not allowed" % (line, field, key))
            if spec and depth < 2:
                check_format(spec, line, depth + 1)

    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                if alias.name.startswith("numpy.") and alias.name[len("numpy."):] not in NUMPY_SUBMODULES:
                    problems.append("line %d: import of %s is not allowed (numpy offers an env its arrays and math only)" % (line, alias.name))
                modules[bound] = sys.modules.get(alias.name if alias.asname else alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source = sys.modules.get(node.module or "")
            if any(alias.name == "*" for alias in node.names):
                problems.append("line %d: from %s import * is not allowed (name the names you use)" % (line, node.module))
            for alias in node.names:
                if bad_attr(alias.name) and alias.name not in ok_dunders:
                    problems.append("line %d: import of %r from %r is not allowed" % (line, alias.name, node.module))
                    continue
                numpy_problem = numpy_attr_problem(node.module or "", alias.name)
                if numpy_problem:
                    problems.append("line %d: %s" % (line, numpy_problem))
                    continue
                value = getattr(source, alias.name, None) if source is not None else None
                if isinstance(value, types.ModuleType):
                    if value.__name__.split(".")[0] not in allowed:
                        problems.append("line %d: %r from %r is the module %s, which is not allowed" % (line, alias.name, node.module, value.__name__))
                    modules[alias.asname or alias.name] = value
        elif isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            text = node.value if isinstance(node.value, str) else node.value.decode("latin-1")
            whole = text.startswith("__") and text.endswith("__") and len(text) > 4  # static_check's rule
            for name in DUNDER.findall(text):
                if not whole and name not in ok_dunders:
                    problems.append("line %d: dunder name %r in a string is not allowed" % (line, name))
            if "{" in text:
                check_format(text, line)
        elif isinstance(node, ast.MatchClass):
            for name in node.kwd_attrs:
                if (name.startswith("__") and name not in ok_dunders) or name.startswith("_") or name in flagged_attrs:
                    problems.append("line %d: match pattern on attribute %r is not allowed" % (line, name))
        elif isinstance(node, ast.Name) and node.id in attr_calls and id(node) not in called:
            problems.append("line %d: %s used other than as a direct call is not allowed" % (line, node.id))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in attr_calls:
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and isinstance(name.value, str) and (
                    name.value in flagged_attrs or name.value in flagged_modules or name.value in FORMATTER_ATTRS):
                problems.append("line %d: %s() of %r is not allowed" % (line, node.func.id, name.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load" and len(node.args) >= 3:
            problems.append("line %d: load() with a third positional argument is not allowed (numpy's allow_pickle: unpickling runs code)" % line)
        elif isinstance(node, ast.keyword) and node.arg == "allow_pickle":
            problems.append("line %d: allow_pickle is not allowed (unpickling runs code)" % getattr(node, "lineno", line))
        elif isinstance(node, ast.Attribute) and node.attr in FORMATTER_ATTRS:
            problems.append("line %d: attribute %r (format fields reach any attribute) is not allowed" % (line, node.attr))
    for name, module in injected_modules().items():  # names the program may use without importing them
        modules.setdefault(name, module)
    for node in ast.walk(tree):  # getattr family with a constant name on a numpy module
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in attr_calls and len(node.args) > 1 \
                and isinstance(node.args[0], ast.Name) and isinstance(modules.get(node.args[0].id), types.ModuleType) \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            numpy_problem = numpy_attr_problem(modules[node.args[0].id], node.args[1].value)
            if numpy_problem:
                problems.append("line %d: %s" % (node.lineno, numpy_problem))
    for node in ast.walk(tree):  # attribute chains that start at a module (after every import is known)
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        chain, base = [], node
        while isinstance(base, ast.Attribute):
            chain.append(base.attr)
            base = base.value
        if not isinstance(base, ast.Name) or base.id not in modules:
            continue
        obj = modules[base.id]
        for attr in reversed(chain):
            if attr.startswith("_") or attr in flagged_modules:
                problems.append("line %d: attribute %r of module %s is not allowed" % (node.lineno, attr, base.id))
                break
            numpy_problem = numpy_attr_problem(obj, attr) if isinstance(obj, types.ModuleType) else ""
            if numpy_problem:
                problems.append("line %d: %s" % (node.lineno, numpy_problem))
                break
            obj = getattr(obj, attr, None) if obj is not None else None
            if isinstance(obj, types.ModuleType) and obj.__name__.split(".")[0] not in allowed:
                problems.append("line %d: %s.%s is the module %s, which is not allowed" % (node.lineno, base.id, ".".join(reversed(chain)), obj.__name__))
                break
    return list(dict.fromkeys(problems))


def print_failure() -> None:
    """Print why a child failed to its captured output (Error.Output); never raises."""
    try:
        sys.stderr.write("".join(safe_trace(sys.exc_info()[1]))[-2000:])
    except BaseException:  # noqa: BLE001
        pass


def wipe(path: str) -> None:
    """Empty an instance's scratch directory when it ends (landlock lets it remove only what is
    beneath its own directory: the empty directory goes with its program's)."""
    try:
        entries = os.listdir(path)  # most instances write nothing
    except OSError:
        return
    if entries:
        import shutil
        for entry in entries:
            full = os.path.join(path, entry)
            if os.path.isdir(full) and not os.path.islink(full):
                shutil.rmtree(full, ignore_errors=True)
            else:
                try:
                    os.unlink(full)
                except OSError:
                    pass


def serve_check(sock: socket.socket, req: dict) -> None:
    """Run the static check and send its problems (the source arrives on sock: parsing happens
    here, and the source never reaches the server)."""
    problems = static_check(repaired_source(recv_code(sock)), req.get("setting", "games"), req.get("allow", []), req.get("flagged", []), req.get("flagged_attrs", []))
    child_send(sock, {"seq": 0, "ok": True, "problems": problems})


# ---------------------------------------------------------------- per-instance scratch limit

# Each instance's scratch directory holds at most SCRATCH_BYTES (sandbox.Options.ScratchBytes), so
# that no instance fills the worker's /tmp (shared by one program's instances) for its siblings. No
# layer can give an instance a file system of its own: the harness holds no capability and the
# seccomp filter denies mount and unshare everywhere (the landlock layer has no mount namespace at
# all). So the limit is kept here, in three parts: RLIMIT_FSIZE (hard) is at most the limit, so no
# single file exceeds it; an instance cannot open a file for writing once its directory is at the
# limit (an audit hook); and after every call, before it replies, an instance over its limit empties
# its directory and replies with an "output" error instead (Go kills it; its siblings go on). Each
# file or directory counts at least one page (SCRATCH_ENTRY), which also bounds the number of inodes.
# Within one call, an instance can overshoot only by the files it opened before the limit was reached
# (each at most RLIMIT_FSIZE); the worker's /tmp (Options.TmpBytes) stays the backstop.
SCRATCH_BYTES: int = CONFIG.get("scratch_bytes", 16 << 20)
SCRATCH_ENTRY = 4096
SCRATCH = None  # this instance's scratch directory, once forked
SCRATCH_ERRNOS = (27, 28, 122)  # EFBIG (RLIMIT_FSIZE), ENOSPC, EDQUOT
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


class ScratchFull(OutputTooLarge):
    """Raised in an instance (or a template) whose scratch directory holds more than its limit."""


def limit_file_size() -> None:
    """Lower RLIMIT_FSIZE (soft and hard) to the scratch limit when it is smaller."""
    if SCRATCH_BYTES > 0 and SCRATCH_BYTES < FSIZE:
        set_limit(resource.RLIMIT_FSIZE, SCRATCH_BYTES, SCRATCH_BYTES)


def limit_scratch(path: str) -> None:
    """Set up the limit of an instance's scratch directory (in the instance, before generated code runs
    in it): the audit hook that refuses new files for writing once the directory is full."""
    global SCRATCH
    if SCRATCH_BYTES <= 0:
        return
    SCRATCH = path
    sys.addaudithook(scratch_audit)


def scratch_usage(path: str, stop: int) -> int:
    """What the tree beneath path takes: each entry's allocated bytes or its length, whichever is more,
    at least SCRATCH_ENTRY; links
    are not followed. Stops counting once past stop (so the walk is bounded by stop/SCRATCH_ENTRY
    entries). A directory the instance made unreadable is made readable again (it is its own)."""
    total, dirs = 0, [path]
    while dirs and total <= stop:
        top = dirs.pop()
        try:
            it = os.scandir(top)
        except PermissionError:
            try:
                os.chmod(top, 0o700)
                it = os.scandir(top)
            except OSError:
                continue
        except OSError:
            continue
        with it:
            for entry in it:
                try:
                    st = entry.stat(follow_symlinks=False)  # (a sparse file counts at its length: a memory map fills it unseen)
                    total += max(st.st_blocks * 512, st.st_size, SCRATCH_ENTRY)
                    if entry.is_dir(follow_symlinks=False):
                        dirs.append(entry.path)
                except OSError:
                    total += SCRATCH_ENTRY
                if total > stop:
                    break
    return total


def scratch_audit(event: str, args: tuple) -> None:
    """Audit hook of an instance: opening a file for writing fails once the scratch directory is at
    its limit."""
    if event == "open" and SCRATCH is not None and len(args) > 2 and type(args[2]) is int and args[2] & WRITE_FLAGS:
        if scratch_usage(SCRATCH, SCRATCH_BYTES) >= SCRATCH_BYTES:
            raise ScratchFull("the scratch directory is full: %d bytes per instance (sandbox.Options.ScratchBytes)" % SCRATCH_BYTES)


def scratch_over() -> bool:
    """Whether this instance's scratch directory holds more than its limit; if so it is emptied."""
    if SCRATCH is None or scratch_usage(SCRATCH, SCRATCH_BYTES) <= SCRATCH_BYTES:
        return False
    wipe(SCRATCH)
    return True


def scratch_message() -> str:
    return "the instance wrote more than %d bytes to its scratch directory (sandbox.Options.ScratchBytes)" % SCRATCH_BYTES


def scratch_check() -> None:
    """Raise ScratchFull (an "output" error) when this instance's scratch directory is over its limit."""
    if scratch_over():
        raise ScratchFull(scratch_message())


def scratch_guard(msg: dict) -> dict:
    """The reply an instance sends instead of msg: an "output" error when its scratch directory is
    over the limit (emptied first), or when what the program raised is the file system refusing a
    write for want of room (EFBIG from RLIMIT_FSIZE, ENOSPC, EDQUOT)."""
    if SCRATCH is None:
        return msg
    if scratch_over():
        return {"seq": msg.get("seq", 0), "ok": False, "kind": "output", "error": "ScratchFull: " + scratch_message(),
                "trace": msg.get("trace", "")}
    if msg.get("ok") is False and msg.get("kind") == "env":
        e = sys.exc_info()[1]
        try:
            full = issubclass(type(e), OSError) and OSError.errno.__get__(e) in SCRATCH_ERRNOS
        except BaseException:  # noqa: BLE001
            full = False
        if full:
            msg = dict(msg, kind="output", error="%s (scratch space: %d bytes per instance, sandbox.Options.ScratchBytes)" % (msg.get("error", ""), SCRATCH_BYTES))
    if msg.get("ok") is False and msg.get("kind") == "output":
        wipe(SCRATCH)  # Go kills the instance on this reply: it never gets to empty its directory at its end
    return msg


# ---------------------------------------------------------------- server side


class Program:
    """The server's record of one spawned child (a template or a check) and its output."""

    def __init__(self, key, pid: int, out_fd: int):
        self.key = key
        self.pid = pid
        self.out_fd = out_fd
        self.out = bytearray()  # tail of the captured output
        self.out_total = 0
        self.overflow = False
        self.status = None  # how the child ended, once reaped


class Server:
    """The fork server: spawns children on Go's sockets, captures their output, kills them."""

    def __init__(self) -> None:
        self.sel = selectors.DefaultSelector()
        self.progs: dict = {}  # key -> Program
        self.by_pid: dict = {}
        self.go_buf = b""
        self.devnull = os.open("/dev/null", os.O_RDONLY)
        self.fd_sock = socket.socket(fileno=GO_FDS)
        self.fd_sock.setblocking(True)

    def send_go(self, msg: dict) -> None:
        data = json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n"
        view = memoryview(data)
        while view:
            n = os.write(GO_OUT, view)
            view = view[n:]

    def spawn(self, req: dict) -> None:
        key, mode = req["key"], req["mode"]
        payload, fds, _, _ = socket.recv_fds(self.fd_sock, 256, 1)
        if not fds or payload.decode() != str(key):
            for fd in fds:
                os.close(fd)
            self.send_go({"id": req["id"], "ok": False, "error": "socket for %r missing" % key})
            return
        if key in self.progs:
            self.kill_prog(key)
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.setpgid(0, 0)
                harden_child()
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)
                os.dup2(self.devnull, 0)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                os.dup2(fds[0], 3, inheritable=False)
                # fds 4 and 5 (Go's) and every other server fd close here, before generated code runs
                os.closerange(4, NOFILE + 16)
                set_limit(resource.RLIMIT_NOFILE, CHILD_NOFILE, CHILD_NOFILE)
                set_limit(resource.RLIMIT_AS, AS_BYTES, AS_BYTES)
                set_limit(resource.RLIMIT_CPU, CPU_SECONDS, CPU_SECONDS + 1)
                sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace")
                sys.stderr = sys.stdout
                sys.stdin = None
                sock = socket.socket(fileno=3)
                if mode == "check":
                    serve_check(sock, req)
                else:
                    serve_template(sock, req)
            except BaseException:  # noqa: BLE001
                code = 70
                print_failure()
            finally:
                try:
                    sys.stdout.flush()
                except BaseException:  # noqa: BLE001
                    pass
                os._exit(code)
        os.close(fds[0])
        os.close(out_w)
        os.set_blocking(out_r, False)
        prog = Program(key, pid, out_r)
        self.progs[key] = prog
        self.by_pid[pid] = prog
        self.sel.register(out_r, selectors.EVENT_READ, ("out", key))
        self.send_go({"id": req["id"], "ok": True, "pid": pid})

    def drain(self, prog: Program) -> None:
        while prog.out_fd >= 0:
            try:
                data = os.read(prog.out_fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.sel.unregister(prog.out_fd)
                os.close(prog.out_fd)
                prog.out_fd = -1
                return
            prog.out_total += len(data)
            prog.out += data
            if len(prog.out) > OUT_KEEP:
                del prog.out[: len(prog.out) - OUT_KEEP]
            if prog.out_total > OUT_CAP and not prog.overflow:
                prog.overflow = True
                self.killpg(prog)

    def killpg(self, prog: Program) -> None:
        for target in (-prog.pid, prog.pid):
            try:
                os.kill(target, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

    def reap(self) -> None:
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            prog = self.by_pid.pop(pid, None)
            if prog is not None:
                prog.status = describe(status)

    def kill_prog(self, key) -> Program:
        prog = self.progs.pop(key, None)
        if prog is None:
            return None
        self.killpg(prog)
        if prog.status is None:
            try:
                _, status = os.waitpid(prog.pid, 0)
                prog.status = describe(status)
            except ChildProcessError:
                prog.status = "gone"
            self.by_pid.pop(prog.pid, None)
        if prog.out_fd >= 0:
            self.drain(prog)
            if prog.out_fd >= 0:
                self.sel.unregister(prog.out_fd)
                os.close(prog.out_fd)
                prog.out_fd = -1
        return prog

    def report(self, rid, prog: Program) -> None:
        if prog is None:
            self.send_go({"id": rid, "ok": True, "out": "", "overflow": False, "status": "gone"})
            return
        if prog.out_fd >= 0:
            self.drain(prog)
        self.send_go({
            "id": rid, "ok": True, "out": bytes(prog.out).decode("utf-8", "replace"),
            "overflow": prog.overflow, "out_total": prog.out_total, "status": prog.status or "running",
        })

    def on_request(self, req: dict) -> None:
        rid, op = req.get("id"), req.get("op")
        if op == "ping":
            self.send_go({"id": rid, "ok": True})
        elif op == "spawn":
            try:
                self.spawn(req)
            except OSError as e:
                self.send_go({"id": rid, "ok": False, "error": "spawn failed: %s" % e})
        elif op == "output":
            self.reap()
            self.report(rid, self.progs.get(req["key"]))
        elif op == "kill":
            # kill one instance of a program: only a process in that program's group
            prog = self.progs.get(req["key"])
            pid = int(req.get("pid", 0))
            killed = False
            if prog is not None and pid > 1 and pid != os.getpid():
                try:
                    if os.getpgid(pid) == prog.pid:
                        os.kill(pid, signal.SIGKILL)
                        killed = True
                except (ProcessLookupError, PermissionError):
                    pass
            self.send_go({"id": rid, "ok": True, "killed": killed})
        elif op == "close":
            self.report(rid, self.kill_prog(req["key"]))
        elif op == "clean":
            problems = self.clean()
            self.send_go({"id": rid, "ok": True, "problems": problems})
        else:
            self.send_go({"id": rid, "ok": False, "error": "unknown op %r" % (op,)})

    def clean(self) -> list:
        """Make the worker as it was before its first program, or say why it is not: kill every
        process of the PID namespace but its init and the server (setsid daemons, CPU burners, a
        program's leftovers), wipe the scratch base, and check the server's limits and dumpable flag.
        Only for a worker with a PID namespace of its own (Go never asks otherwise)."""
        for key in list(self.progs):
            self.kill_prog(key)
        me, survivors = os.getpid(), []
        for _ in range(200):
            survivors = [pid for pid in live_pids() if pid not in (1, me)]
            if not survivors:
                break
            for pid in survivors:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.reap()
            time.sleep(0.0005)
        problems = ["process %d survived" % pid for pid in survivors]
        for entry in os.listdir(SCRATCH_BASE):
            path = os.path.join(SCRATCH_BASE, entry)
            try:
                if os.path.isdir(path) and not os.path.islink(path):
                    wipe(path)
                    os.rmdir(path)  # the program's directory itself, now empty
                else:
                    os.unlink(path)
            except OSError:
                pass
        left = os.listdir(SCRATCH_BASE)
        if left:
            problems.append("scratch space not empty: %r" % left[:5])
        ipc = sysv_objects()
        if ipc:
            problems.append("System V IPC objects left: %s" % ", ".join(ipc[:5]))
        for which, want in LIMITS.items():
            if resource.getrlimit(which) != want:
                problems.append("rlimit %d changed to %r" % (which, resource.getrlimit(which)))
        if libc().prctl(3, 0, 0, 0, 0) != 0:  # PR_GET_DUMPABLE
            problems.append("the server became dumpable")
        return problems

    def serve(self) -> None:
        os.set_blocking(GO_IN, False)
        self.sel.register(GO_IN, selectors.EVENT_READ, ("go", None))
        while True:
            for sk, _ in self.sel.select(0.5 if self.by_pid else None):
                kind, key = sk.data
                if kind == "go":
                    try:
                        data = os.read(GO_IN, 1 << 20)
                    except BlockingIOError:
                        continue
                    if not data:
                        return
                    self.go_buf += data
                    while b"\n" in self.go_buf:
                        line, self.go_buf = self.go_buf.split(b"\n", 1)
                        self.on_request(json.loads(line))
                else:
                    prog = self.progs.get(key)
                    if prog is not None:
                        self.drain(prog)
            self.reap()
            if self.by_pid:
                kill_detached()


def live_pids() -> list:
    """The pids /proc lists, less zombies and processes already bound to die (SIGKILL pending:
    such a process runs no more user code and cannot fork), so clean need not wait for them. A
    zombie thread-group leader whose other threads still run is not a zombie (live_threads)."""
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/status" % entry, "rb") as f:
                    fields = dict(line.split(b":", 1) for line in f.read().splitlines() if b":" in line)
                if fields[b"State"].split()[0] in (b"Z", b"X") and not live_threads(entry):
                    continue
                if (int(fields[b"SigPnd"], 16) | int(fields[b"ShdPnd"], 16)) & (1 << (signal.SIGKILL - 1)):
                    continue
            except (OSError, KeyError, ValueError):
                continue
            pids.append(int(entry))
    return pids


def live_threads(pid: str) -> bool:
    """Whether any thread of process pid is in a state other than zombie or dead: a leader that
    exited alone shows Z while the threads it started go on running."""
    try:
        tids = os.listdir("/proc/%s/task" % pid)
    except OSError:
        return False
    for tid in tids:
        try:
            with open("/proc/%s/task/%s/stat" % (pid, tid), "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            return True
    return False


def sysv_objects() -> list:
    """The System V IPC objects of this IPC namespace ("shm 3", ...): none can be made under the seccomp
    filter, and clean proves it."""
    out = []
    for kind in ("shm", "msg", "sem"):
        try:
            with open("/proc/sysvipc/" + kind) as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        out += ["%s %s" % (kind, line.split()[1]) for line in lines if len(line.split()) > 1]
    return out


LIMITS: dict = {}  # the server's rlimits once set (clean checks them)


def describe(status: int) -> str:
    """Say how a process ended."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return "killed by " + signal.Signals(sig).name
        except ValueError:
            return "killed by signal %d" % sig
    return "exited with status %d" % os.WEXITSTATUS(status)


def main() -> None:
    """Harden the server, set its limits, preload modules, freeze the heap and serve."""
    os.closerange(GO_FDS + 1, 1024)  # bwrap's seccomp program arrives on fd 6
    libc()
    import shutil, struct  # noqa: F401,E401 - for wipe and restrict_to, in every child
    global LANDLOCK_PLAN
    LANDLOCK_PLAN = landlock_plan()
    if HARDEN:
        prctl(PR_SET_DUMPABLE, 0)  # no process of our uid may read our memory or take our fds
    os.umask(0o077)
    set_limit(resource.RLIMIT_CORE, 0, 0)
    set_limit(resource.RLIMIT_NOFILE, NOFILE, NOFILE)
    set_limit(resource.RLIMIT_FSIZE, FSIZE, FSIZE)
    if NPROC > 0:
        set_limit(resource.RLIMIT_NPROC, NPROC, NPROC)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    loaded = []
    for name in PRELOAD:
        try:
            __import__(name)
            loaded.append(name)
        except Exception:  # noqa: BLE001 - a missing optional module is reported, not fatal
            pass
    if HARDEN and "numpy" in loaded:
        numpy_view()  # made once here, so no template spends its load deadline on it
    for name in dir(resource):
        if name.startswith("RLIMIT_"):
            LIMITS[getattr(resource, name)] = resource.getrlimit(getattr(resource, name))
    gc.collect()
    gc.freeze()
    seal_harness()
    server = Server()
    server.send_go({
        "id": 0, "ok": True, "hello": PROTOCOL_VERSION, "python": sys.version.split()[0],
        "executable": sys.executable, "modules": loaded, "uid": os.getuid(), "pid": os.getpid(),
    })
    server.serve()


# ---------------------------------------------------------------- the environment contract

# Gymnasium's API as the authors define it (their Designer prompt's interface contract and their
# loader, spade/core/envs/synthetic_game_env.py): a class named ...Env made as Cls(max_turns=N) (or
# Cls() and then max_turns set), reset(seed=None) giving (observation, info) or an observation,
# step(action) giving (observation, reward, terminated, truncated, info), and optional solution() and
# close(). Programs in the old shape (one class, reset(seed) -> str, step -> (obs, reward, done, info))
# keep running: step_fields reports which shape a step returned.
MAX_TURNS: int = CONFIG.get("max_turns", 0)  # passed to the constructor; 0: Cls() alone
OWN_MAX_TURNS: bool = CONFIG.get("own_max_turns", False)  # keep the class's own max_turns, capped at MAX_TURNS
INJECT: dict = CONFIG.get("inject", {})  # name -> "module" or "module:attribute" (sandbox.Options.Inject)
ENV_BASE_NAMES = {"Env", "ToolUseBaseEnv"}  # base classes' names that are never the env class


def choose_env_class(names: list, bases: dict) -> tuple:
    """Pick the env class among the classes that have reset() and step(), in definition order: the only
    one; else those named ...Env, less any that another of them derives from, and the first of those.
    bases maps a name to the names it derives from (transitively). Returns (name, None) or (None, why)."""
    if not names:
        return None, "expected a class with reset() and step(), found none"
    if len(names) == 1:
        return names[0], None
    named = [n for n in names if n.endswith("Env") and n not in ENV_BASE_NAMES]
    leaves = [n for n in named if not any(n in bases.get(other, ()) for other in named if other != n)]
    if not leaves:
        return None, ("found %d classes with reset() and step() (%s) and none named ...Env: give the env class a name "
                      "ending in Env" % (len(names), ", ".join(names[:6])))
    return leaves[0], None


def env_class_problems(tree, setting: str) -> list:
    """The static check's rule on classes: a top-level class has reset() and step() (its own or one of
    its bases' in the program) and choose_env_class finds the env class; in the tools setting that
    class has tools()."""
    defs, order = {}, []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            own = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            defs[node.name] = (own, [b.id for b in node.bases if isinstance(b, ast.Name)])
            order.append(node.name)

    def ancestors(name: str, seen: set) -> set:
        for base in defs.get(name, (set(), []))[1]:
            if base in defs and base not in seen:
                seen.add(base)
                ancestors(base, seen)
        return seen

    bases = {name: ancestors(name, set()) for name in order}
    methods = {name: set().union(defs[name][0], *(defs[b][0] for b in bases[name])) for name in order}
    if "ToolUseBaseEnv" not in defs:  # a class deriving from the injected ToolUseBaseEnv has its methods too
        for name in order:
            if any("ToolUseBaseEnv" in defs[c][1] for c in bases[name] | {name}):
                methods[name] |= TOOL_BASE_METHODS
    names = [n for n in dict.fromkeys(order) if "reset" in methods[n] and "step" in methods[n]]
    chosen, why = choose_env_class(names, bases)
    if why:
        return [why]
    if setting == "tools" and "tools" not in methods[chosen]:
        return ["class %s has no tools() method (required in the tools setting)" % chosen]
    return []


def find_env_class(module: dict):
    """The loaded program's env class (choose_env_class over the classes it defined)."""
    found = [v for v in module.values() if isinstance(v, type) and getattr(v, "__module__", None) == MODULE_NAME
             and callable(getattr(v, "reset", None)) and callable(getattr(v, "step", None))]
    by_name = {type.__dict__["__name__"].__get__(c): c for c in found}
    bases = {name: {type.__dict__["__name__"].__get__(b) for b in type.__dict__["__mro__"].__get__(c)[1:]}
             for name, c in by_name.items()}
    chosen, why = choose_env_class(list(by_name), bases)
    if why:
        raise ValueError(why)
    global RESET_BY_KEYWORD
    RESET_BY_KEYWORD = reset_takes_seed_keyword(by_name[chosen], bound=False)  # once, before any instance is forked
    return by_name[chosen]


def inject_names(module: dict, code: str) -> None:
    """Bind the injected names (INJECT) that the program's text mentions in its module, as the authors'
    loader does for its common standard-library names; a module that is not installed is left out.
    ToolUseBaseEnv, the tools setting's base class, is bound the same way whenever the text names it."""
    import importlib
    import re
    if "ToolUseBaseEnv" not in module and "ToolUseBaseEnv" in code:
        module["ToolUseBaseEnv"] = ToolUseBaseEnv  # the tools setting's base class, bound as the authors' loader binds it
    if not INJECT:
        return
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))
    for name, target in INJECT.items():
        if name not in words or name in module:
            continue
        module_name, _, attr = target.partition(":")
        try:
            value = safe_module(module_name) if module_name in SAFE_MODULES else importlib.import_module(module_name)
            if module_name == "numpy" and HARDEN and type(module["__builtins__"]) is dict:
                value = numpy_view()  # (a hardened program's numpy: numpy_view)
            module[name] = getattr(value, attr) if attr else value
        except (ImportError, AttributeError):
            continue


def injected_modules() -> dict:
    """The injected names that are whole modules -> the module where it is loaded (else None), for the
    static check's rules on modules' attributes."""
    return {name: sys.modules.get(target) for name, target in INJECT.items() if ":" not in target}


# ---------------------------------------------------------------- the tools setting's base class

import re as _re  # (imported here, below serve_instance, so the harness's earlier line numbers stay)

TOOL_ANSWER = _re.compile(r"<answer>(.*?)</answer>", _re.DOTALL)
TOOL_CALL = _re.compile(r"<tool_call>(.*?)</tool_call>", _re.DOTALL)


class ToolUseBaseEnv:
    """The base class of a tools-setting program, bound in its module as ToolUseBaseEnv (never
    imported). A subclass writes reset(seed) (setting self._tools: name -> {"description",
    "parameters" (a JSON schema)}, the backend self._state and self._expected_answer; returning
    (instruction, {})), solution() and one tool_<name>(**arguments) method per tool. This class
    gives the rest: get_tools() (OpenAI function schemas), execute_tool(name, arguments) for a call
    the client parsed, and step(text) for a turn's text (an <answer> first, else one <tool_call>
    JSON, else a format error of -0.1). A program that keeps 3 to 5 instructions in
    self._user_messages with self._current_msg as the pending one gets that instruction named in
    the reply to a wrong answer. It reaches nothing but its own instance's tool_ methods."""

    def __init__(self, max_turns: int = 10, **kwargs) -> None:
        self.max_turns = max_turns
        self.turn_count = 0
        self._tools = {}
        self._state = {}
        self._call_history = []
        self._expected_answer = None
        self.reset()

    def reset(self, seed=None):
        raise NotImplementedError("a ToolUseBaseEnv subclass defines reset(seed)")

    def solution(self) -> str:
        raise NotImplementedError("a ToolUseBaseEnv subclass defines solution()")

    def tools(self) -> list:
        """The tool schemas, for the harness's tools op (get_tools)."""
        return self.get_tools()

    def get_tools(self) -> list:
        """self._tools as OpenAI function schemas, in their order: {"type": "function", "function":
        {"name", "description" ("" when absent), "parameters" (an empty object schema when absent)}}."""
        return [{"type": "function", "function": {
            "name": name,
            "description": info.get("description", ""),
            "parameters": info.get("parameters", {"type": "object", "properties": {}}),
        }} for name, info in self._tools.items()]

    def _tool_method(self, name):
        """The bound tool_<name> method, or None. The prefix keeps a model-chosen name off every
        attribute but the program's own tools (no dunder, no private name is reachable)."""
        if not isinstance(name, str):
            return None
        method = getattr(self, "tool_" + name, None)
        return method if callable(method) else None

    def execute_tool(self, name: str, arguments: dict) -> dict:
        """Run one parsed call: {"output": str(result), "returncode": 0}, recorded in the call
        history; {"output": "Unknown tool '<name>'", "returncode": 1} for a name with no method;
        {"output": "Error calling <name>: <exception>", "returncode": 1} when the tool raises. It
        does not count a turn."""
        method = self._tool_method(name)
        if method is None:
            return {"output": "Unknown tool '%s'" % (name,), "returncode": 1}
        try:
            output = str(method(**arguments))
        except Exception as e:  # noqa: BLE001 - a generated tool may raise anything
            return {"output": "Error calling %s: %s" % (name, e), "returncode": 1}
        self._call_history.append({"name": name, "arguments": arguments, "result": output})
        return {"output": output, "returncode": 0}

    def step(self, action: str):
        """One turn of text. The turn counts; the last one (turn_count >= max_turns) truncates.
        A correct <answer> terminates with 1.0; a wrong one gives 0.0 (with the solution on the last
        turn). Without <answer>: no <tool_call> gives the format error (-0.1), unreadable JSON the
        arguments error (-0.1), an unknown name 0.0 with the tools' names, a call "Tool result:\\n"
        with its output (or its error) and 0.0. On the last turn every reply but a correct answer
        ends in the solution, with reward 0.0."""
        self.turn_count += 1
        last = self.turn_count >= self.max_turns
        found = TOOL_ANSWER.search(action)
        if found:
            if self._check_answer(found.group(1).strip()):
                return "Correct!", 1.0, True, False, {}
            if last:
                return "Wrong answer. Solution:\n%s" % self.solution(), 0.0, False, True, {}
            return self._incorrect_answer_feedback(), 0.0, False, False, {}
        found = TOOL_CALL.search(action)
        if not found:
            if last:
                return "Time up. Solution:\n%s" % self.solution(), 0.0, False, True, {}
            return "Format error: use tools to call a function, or <answer>result</answer> to submit.", -0.1, False, False, {}
        try:
            call = json.loads(found.group(1))
            name, arguments = call.get("name", ""), call.get("arguments", {})
            if not isinstance(arguments, dict):
                arguments = {}
        except (ValueError, AttributeError):
            if last:
                return "Time up. Solution:\n%s" % self.solution(), 0.0, False, True, {}
            return "Format error: invalid tool call arguments.", -0.1, False, False, {}
        method = self._tool_method(name)
        if method is None:
            if last:
                return "Time up. Solution:\n%s" % self.solution(), 0.0, False, True, {}
            return "Unknown tool '%s'. Available: %s" % (name, ", ".join(self._tools.keys())), 0.0, False, False, {}
        try:
            result = method(**arguments)
            self._call_history.append({"name": name, "arguments": arguments, "result": str(result)})
        except Exception as e:  # noqa: BLE001
            result = "Error calling %s: %s" % (name, e)
        obs = "Tool result:\n%s" % (result,)
        if last:
            return obs + "\n\nTime up. Solution:\n%s" % self.solution(), 0.0, False, True, {}
        return obs, 0.0, False, False, {}

    def _obs_suffix(self) -> str:
        """Always "": the tools reach the Agent through the chat template, not the observation."""
        return ""

    def _incorrect_answer_feedback(self) -> str:
        """The reply to a wrong answer; it names the pending instruction (step i/n) when the program
        keeps self._user_messages and a self._current_msg inside them."""
        text = "Incorrect. Keep using tools."
        messages, pending = getattr(self, "_user_messages", None), getattr(self, "_current_msg", None)
        if isinstance(messages, (list, tuple)) and isinstance(pending, int) and not isinstance(pending, bool) and 0 <= pending < len(messages):
            return ("%s Not all steps are complete \u2014 you are still on step %d/%d: \"%s\" Complete this step "
                    "with the tools before submitting <answer>done</answer>." % (text, pending + 1, len(messages), messages[pending]))
        return text

    def _check_answer(self, answer: str) -> bool:
        """answer equals self._expected_answer case-insensitively once both are stripped, or both read
        as numbers (after dropping "$" and ",") within 0.01 of each other."""
        given, expected = str(answer).strip(), str(self._expected_answer).strip()
        if given.lower() == expected.lower():
            return True
        try:
            return abs(float(given.replace("$", "").replace(",", "").strip()) - float(expected.replace("$", "").replace(",", "").strip())) < 0.01
        except (ValueError, TypeError):
            return False

    def close(self) -> None:
        pass


TOOL_BASE_METHODS = frozenset(n for n, v in ToolUseBaseEnv.__dict__.items() if callable(v))  # for the static check


def construct(cls):
    """Make the env the authors' way. With OWN_MAX_TURNS: Cls() (Cls(max_turns=MAX_TURNS) when that
    raises TypeError), then its max_turns set to min(its own, MAX_TURNS) when its own is a positive
    int, else to MAX_TURNS where it has the attribute. Without: Cls(max_turns=MAX_TURNS); on a
    TypeError, Cls() and then its max_turns set where it has one. With MAX_TURNS 0, Cls()."""
    if MAX_TURNS <= 0:
        return cls()
    if OWN_MAX_TURNS:
        try:
            env = cls()
        except TypeError:
            env = cls(max_turns=MAX_TURNS)
        own = getattr(env, "max_turns", None)
        if isinstance(own, int) and own > 0:
            env.max_turns = min(own, MAX_TURNS)
        elif hasattr(env, "max_turns"):
            env.max_turns = MAX_TURNS
        return env
    try:
        return cls(max_turns=MAX_TURNS)
    except TypeError:
        env = cls()
        if hasattr(env, "max_turns"):
            env.max_turns = MAX_TURNS
        return env


RESET_BY_KEYWORD = None  # reset_takes_seed_keyword of the env class, worked out in the template


def reset_takes_seed_keyword(env, bound: bool = True) -> bool:
    """Whether reset is called as reset(seed=N) (a parameter named seed, or only **kwargs), the authors'
    call, rather than reset(N) (an old program's reset(self, s)); never raises. For an instance whose
    reset is its class's, the template's answer for the class (RESET_BY_KEYWORD); bound False reads an
    unbound reset (its first parameter is self)."""
    import inspect
    try:
        if bound and RESET_BY_KEYWORD is not None and "reset" not in object.__getattribute__(env, "__dict__"):
            return RESET_BY_KEYWORD
    except BaseException:  # noqa: BLE001 - an instance without a __dict__ (slots) is read below
        pass
    try:
        params = list(inspect.signature(env.reset).parameters.values())[0 if bound else 1:]
    except BaseException:  # noqa: BLE001 - a generated callable's signature is generated code too
        return False
    if any(p.name == "seed" and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params):
        return True
    return any(p.kind == p.VAR_KEYWORD for p in params) and not any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.VAR_POSITIONAL) for p in params)


def exact_items(value) -> tuple:
    """The items of a tuple as stored (a subclass's __len__ or __iter__ may lie)."""
    return value if type(value) is tuple else tuple.__getitem__(value, slice(None))


def reset_observation(result) -> str:
    """The observation of what reset returned: (observation, info) with info a dict (or None), or a
    bare observation. An info of None is noted for reset_shape (the authors' validation wants a dict)."""
    global RESET_INFO_NONE
    RESET_INFO_NONE = False
    if isinstance(result, tuple):
        items = exact_items(result)
        if len(items) != 2:
            raise TypeError("reset must return (observation, info) or an observation, got a %d-tuple" % len(items))
        obs, info = items
        if info is not None and not isinstance(info, dict):
            raise TypeError("reset's info must be a dict, got %s" % type(info).__name__)
        RESET_INFO_NONE = info is None
        return check_obs(obs)
    return check_obs(result)


RESET_INFO_NONE = False  # whether the last reset_observation saw (observation, None)
RESET_SHAPE_OK, RESET_SHAPE_NONE = {"deviations": []}, {"deviations": ["info is None, not a dict"]}


def reset_shape(env, obs: str) -> dict:
    """The departures of the last reset's return from the types the authors' validation wants: an
    (observation, info) pair whose info is a dict, or a bare observation (env and obs are unused: the
    shape was noted by reset_observation)."""
    return RESET_SHAPE_NONE if RESET_INFO_NONE else RESET_SHAPE_OK


# ---------------------------------------------------------------- the authors' f-string brace repair

REPAIR_FSTRINGS: bool = CONFIG.get("repair_fstrings", False)  # sandbox.Options.RepairFStrings
REPAIR_ROUNDS = 20  # lines repaired at most, one per syntax error, as the authors' loader does
BRACED = None  # re.compile(r"\{([^{}]*)\}"), once


def repaired_source(code: str) -> str:
    """The program as the authors' loader runs it (with REPAIR_FSTRINGS): while it does not parse, the
    line of the syntax error has each {...} whose content is not an expression doubled to {{...}} (the
    braces an f-string meant literally); it stops when the program parses, when the error has no line,
    or when a round changes nothing, and gives up after REPAIR_ROUNDS rounds. Without REPAIR_FSTRINGS,
    or when the program parses, the code is returned as it came."""
    if not REPAIR_FSTRINGS:
        return code
    import re
    global BRACED
    if BRACED is None:
        BRACED = re.compile(r"\{([^{}]*)\}")

    def doubled(match) -> str:
        try:
            ast.parse(match.group(1), mode="eval")
            return match.group(0)
        except SyntaxError:
            return "{{" + match.group(1) + "}}"

    for _ in range(REPAIR_ROUNDS):
        try:
            ast.parse(code)
            return code
        except SyntaxError as e:
            lines = code.split("\n")
            if not e.lineno or e.lineno - 1 >= len(lines):
                return code
            fixed = BRACED.sub(doubled, lines[e.lineno - 1])
            if fixed == lines[e.lineno - 1]:
                return code
            lines[e.lineno - 1] = fixed
            code = "\n".join(lines)
        except (ValueError, RecursionError, MemoryError):  # a null byte, nesting too deep: the checks say so
            return code
    return code


# ---------------------------------------------------------------- operator without routes to private names

SAFE_MODULES = ("operator",)  # modules a program gets in a confined form (safe_module) when it imports or is injected them


def public_path(name, what: str) -> str:
    """name, when it is a str whose dotted parts are all public (no leading underscore); else a TypeError
    or ValueError saying that only public names are allowed."""
    if not isinstance(name, str):
        raise TypeError("%s: attribute name must be a str, got %s" % (what, type(name).__name__))
    name = str.__str__(name)
    if any(part.startswith("_") for part in name.split(".")):
        raise ValueError("%s: private and dunder attributes are not allowed here (%r)" % (what, name))
    return name


def safe_operator():
    """A module named operator with every public name of the real one, except that attrgetter and
    methodcaller (operator's only routes from a string to an attribute) refuse a private or dunder name
    (an underscore at the start of any dotted part): a program cannot reach __globals__, __class__ or a
    module's private state through them."""
    import operator
    import types
    real_attrgetter, real_methodcaller = operator.attrgetter, operator.methodcaller
    safe = types.ModuleType("operator", "operator with attrgetter and methodcaller limited to public names")
    for name in dir(operator):
        if not name.startswith("_"):
            setattr(safe, name, getattr(operator, name))

    def attrgetter(attr, *attrs):
        """operator.attrgetter for public attribute names only."""
        return real_attrgetter(*(public_path(a, "attrgetter") for a in (attr,) + attrs))

    def methodcaller(name, /, *args, **kwargs):
        """operator.methodcaller for public method names only."""
        return real_methodcaller(public_path(name, "methodcaller"), *args, **kwargs)

    safe.attrgetter, safe.methodcaller = attrgetter, methodcaller
    return safe


SAFE_MODULE_CACHE: dict = {}


def safe_module(name: str):
    """The confined form of a module of SAFE_MODULES, made once per process."""
    if name not in SAFE_MODULE_CACHE:
        SAFE_MODULE_CACHE[name] = safe_operator()
    return SAFE_MODULE_CACHE[name]


def as_flag(value, name: str) -> tuple:
    """A step's terminated, truncated or done as a bool, and whether it was not a bool (the authors'
    check wants a bool; numpy's bool and an int are accepted, and reported)."""
    if value is True or value is False:
        return value, False
    if isinstance(value, int):
        return int.__index__(value) != 0, True
    kind = type(value)
    if type.__dict__["__name__"].__get__(kind) in ("bool_", "bool") and type.__dict__["__module__"].__get__(kind) == "numpy":
        return bool(value), True
    raise TypeError("%s must be bool, got %s" % (name, type(value).__name__))


def step_fields(result) -> tuple:
    """(observation, reward, terminated, truncated, info, shape) of what step returned: Gymnasium's
    5-tuple, or the old 4-tuple (obs, reward, done, info) read as terminated = done. shape is the JSON of
    {"arity": 5 or 4, "deviations": [...]}, the departures from the types the authors' validator
    wants (a bool terminated and truncated, an int or float reward, a dict info)."""
    if not isinstance(result, tuple):
        raise TypeError("step must return (observation, reward, terminated, truncated, info), got %s" % type(result).__name__)
    items = exact_items(result)
    deviations = []
    if len(items) == 5:
        obs, reward, terminated, truncated, info = items
        terminated, loose = as_flag(terminated, "terminated")
        if loose:
            deviations.append("terminated is not a bool")
        truncated, loose = as_flag(truncated, "truncated")
        if loose:
            deviations.append("truncated is not a bool")
    elif len(items) == 4:
        obs, reward, done, info = items
        terminated, _ = as_flag(done, "done")
        truncated = False
    else:
        raise TypeError("step must return (observation, reward, terminated, truncated, info) (or the old "
                        "(observation, reward, done, info)), got a %d-tuple" % len(items))
    if not isinstance(reward, (int, float)):
        deviations.append("reward is a %s, not an int or float" % type(reward).__name__)
    if not isinstance(info, dict):
        deviations.append("info is %s, not a dict" % ("None" if info is None else "a " + type(info).__name__))
    if not deviations:
        return obs, reward, terminated, truncated, info, SHAPE_5 if len(items) == 5 else SHAPE_4
    return obs, reward, terminated, truncated, info, _dumps({"arity": len(items), "deviations": deviations})


SHAPE_5, SHAPE_4 = '{"arity":5,"deviations":[]}', '{"arity":4,"deviations":[]}'  # step_fields' shapes, as JSON


def _json_bool(value: bool) -> str:
    return "true" if value else "false"


def close_env(env) -> None:
    """Call the env's close() when Go is done with the instance (its socket closed), as the authors'
    wrapper does; it has two seconds (then SIGALRM ends the process), and what it raises is ignored."""
    try:
        close = getattr(env, "close", None)
        if callable(close):
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(2)
            close()
    except BaseException:  # noqa: BLE001 - generated code may raise anything; the instance ends anyway
        pass


# ---------------------------------------------------------------- the template after a program loaded

class TemplateTainted(Exception):
    """Raised in a template whose program left something running or installed after it loaded."""


def signal_handlers() -> dict:
    """The handler of every catchable signal, by number."""
    out = {}
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            out[sig] = signal.getsignal(sig)
        except (ValueError, OSError):
            continue
    return out


def template_problems(before: dict) -> None:
    """Refuse a program that, once loaded, left the template with more than its one thread (a thread would
    outlive every fork and reach every instance's scratch directory), with a child process, or with a
    signal handler other than the harness's: each would couple the program's episodes, which are all
    forked from this template. Off without HARDEN (a test showing the attacks work without it)."""
    if not HARDEN:
        return
    try:
        threads = len(os.listdir("/proc/self/task"))
    except OSError:
        threading = sys.modules.get("threading")
        threads = threading.active_count() if threading is not None else 1
    if threads != 1:
        raise TemplateTainted("the program left %d thread(s) running after it loaded (an env may not start threads)" % (threads - 1))
    try:
        os.waitpid(-1, os.WNOHANG)  # a child, running or exited
        has_child = True
    except ChildProcessError:
        has_child = False
    if has_child:
        raise TemplateTainted("the program left a child process after it loaded (an env may not start processes)")
    changed = sorted(signal.Signals(sig).name for sig, handler in signal_handlers().items() if before.get(sig) is not handler
                     and before.get(sig) != handler)
    if changed:
        raise TemplateTainted("the program installed signal handlers when it loaded (%s)" % ", ".join(changed))
    shared = shared_mappings()
    if shared:
        raise TemplateTainted("the program left a shared memory map after it loaded (%s): every episode would share it"
                              % ", ".join(shared[:3]))


# ---------------------------------------------------------------- the program's namespace

# Builtins a program's module does without: the ways from a string to code (eval, exec, compile) and
# the interactive console's (breakpoint, help, ...). The static check refuses these names in the source; leaving them out of the module's
# builtins also disarms a string that an allowed module evaluates later in the module's globals (an
# annotation, a gadget). What code can reach (files, processes, sockets) is the isolation layers' to
# contain.
WITHHELD_BUILTINS = frozenset({"eval", "exec", "compile", "breakpoint", "help", "copyright", "credits", "license",
                               "__loader__", "__spec__"})


class ImportRefused(ImportError):
    """Raised by a program's __import__ for a module its source does not import."""


def program_builtins() -> dict:
    """A copy of the builtins for one program's module, less WITHHELD_BUILTINS; its __import__ is set by
    guard_imports once the program's imports are known."""
    import builtins
    return {k: v for k, v in builtins.__dict__.items() if k not in WITHHELD_BUILTINS}


def imported_roots(code) -> set:
    """The top-level modules named by the import statements of a compiled program (IMPORT_NAME in its
    code objects, nested functions and classes included)."""
    import dis
    op, ext = dis.opmap["IMPORT_NAME"], dis.EXTENDED_ARG
    roots, todo, code_type = set(), [code], type(code)
    while todo:
        co = todo.pop()
        raw, arg = co.co_code, 0
        for i in range(0, len(raw), 2):
            o = raw[i]
            if o == ext:
                arg = (arg | raw[i + 1]) << 8
                continue
            if o == op:
                roots.add(co.co_names[arg | raw[i + 1]].partition(".")[0])
            arg = 0
        todo.extend(c for c in co.co_consts if isinstance(c, code_type))
    return roots


def guard_imports(module: dict, code) -> dict:
    """Give the program's module an __import__ that admits only the top-level modules its own import
    statements and its injected names name (each already passed the static check's allowlist), and no
    relative import: a string evaluated later in the module's globals cannot import anything else.
    Without HARDEN the module keeps the real builtins."""
    if not HARDEN or type(module["__builtins__"]) is not dict:  # (the real builtins: a trusted program)
        return module
    import builtins
    real = builtins.__import__
    allowed = frozenset(imported_roots(code) | {t.partition(":")[0].partition(".")[0] for t in INJECT.values()})

    def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
        root = str.__str__(name).partition(".")[0] if isinstance(name, str) else ""
        if level != 0 or root not in allowed:
            raise ImportRefused("import of %r is not allowed here: an env imports only what its import statements name" % (name,))
        if root in SAFE_MODULES:
            if name != root:
                raise ImportRefused("import of %r is not allowed here" % (name,))
            return safe_module(root)
        if root == "numpy":
            return numpy_import(str.__str__(name), fromlist, real)
        return real(name, globals, locals, fromlist, level)

    module["__builtins__"]["__import__"] = guarded_import
    return module


# ---------------------------------------------------------------- the harness's state under seal

# Modules whose functions and classes the template and its forked instances call after a program
# has loaded (or that those reach through sys.modules), besides the harness's own globals.
SEALED_MODULES = ("builtins", "sys", "os", "posix", "posixpath", "socket", "_socket", "json", "json.decoder",
                  "json.encoder", "json.scanner", "signal", "gc", "time", "traceback", "io", "resource", "selectors",
                  "select", "struct", "math", "ctypes", "shutil", "errno", "stat", "importlib", "inspect", "dis")
SYS_SEALED = ("modules", "meta_path", "path_hooks", "excepthook", "unraisablehook",
              "exit", "_getframe", "audit")
UNSEALED_GLOBALS = frozenset({"RESET_BY_KEYWORD", "DUNDER", "SCRATCH", "SEAL", "RESET_INFO_NONE", "BRACED", "SAFE_MODULE_CACHE", "NUMPY_VIEW", "NUL_ESCAPE"})  # the harness sets these itself
SEAL_DEPTH = 3  # how far the seal follows containers, closures, class namespaces and instances


class Seal:
    """What harness_seal recorded (plain lists, read only by verify_seal): every object reached with its
    type, every container (dict, list, tuple, class or instance namespace, closure cell) with the keys and
    values it held, every function with its code and defaults, and what each of these is (labels)."""

    def __init__(self):
        self.objects, self.types, self.object_labels = [], [], []
        self.containers, self.functions = [], []  # (object, kind, keys, values, label); (function, code, defaults, kwdefaults, label)


def container_contents(obj, kind: str, _tuple=tuple, _dict_keys=dict.keys, _dict_values=dict.values,
                       _type_dict=type.__dict__["__dict__"].__get__, _object_attr=object.__getattribute__,
                       _unsealed=UNSEALED_GLOBALS, _modules=sys.modules, _sys=sys) -> tuple:
    """(keys, values) that a container holds now, read through the builtin types' own methods only. Kinds
    besides the builtin containers: "globals" (a namespace less UNSEALED_GLOBALS), "modules" (obj names
    entries of sys.modules) and "sys" (obj names attributes of sys)."""
    if kind == "dict":
        return _tuple(_dict_keys(obj)), _tuple(_dict_values(obj))
    if kind == "globals":
        keys = _tuple(k for k in _dict_keys(obj) if k not in _unsealed)
        return keys, _tuple(obj[k] for k in keys)
    if kind == "modules":
        return obj, _tuple(_modules.get(k) for k in obj)
    if kind == "sys":
        d = _object_attr(_sys, "__dict__")
        return obj, _tuple(d.get(k) for k in obj)
    if kind == "class":
        proxy = _type_dict(obj)
        return _tuple(proxy.keys()), _tuple(proxy.values())
    if kind == "instance":
        d = _object_attr(obj, "__dict__")
        return _tuple(_dict_keys(d)), _tuple(_dict_values(d))
    if kind == "cell":
        try:
            return (), (obj.cell_contents,)
        except ValueError:  # an empty cell
            return (), ()
    return (), _tuple(obj)  # list or tuple


def seal_walk(seal: Seal, label: str, value, depth: int, seen: set) -> None:
    """Record value (its type, and where depth allows what it holds) in seal, once per object."""
    if id(value) in seen:
        return
    seen.add(id(value))
    t = type(value)
    seal.objects.append(value)
    seal.types.append(t)
    seal.object_labels.append(label)
    if value is sys.modules:
        return  # (what imports add to; its entries that matter are sealed by name)
    if depth <= 0 or t in (int, float, str, bytes, bool, type(None), complex, frozenset) or t is type(sys):
        return  # (a module is sealed by its name in sys.modules, not through every name bound to it)
    if t is type(seal_walk):
        seal.functions.append((value, value.__code__, value.__defaults__, value.__kwdefaults__, label))
        for item in (value.__defaults__ or ()):
            seal_walk(seal, label + " (defaults)", item, depth - 1, seen)
        for item in (value.__kwdefaults__ or {}).values():
            seal_walk(seal, label + " (defaults)", item, depth - 1, seen)
        for cell in value.__closure__ or ():
            seal_container(seal, cell, "cell", label + " (closure)", depth, seen)
        return
    if t is dict:
        kind = "dict"
    elif t is list or t is tuple:
        kind = "list"
    elif t is type(harden_child.__get__(0)):
        seal_walk(seal, label + " (function)", value.__func__, depth - 1, seen)
        seal_walk(seal, label + " (self)", value.__self__, depth - 1, seen)
        return
    elif isinstance(value, type):
        if not type.__dict__["__flags__"].__get__(value) & (1 << 9):  # Py_TPFLAGS_HEAPTYPE: a static type cannot change
            return
        kind = "class"
    elif t is type([].append) or t is type(seal.objects.__len__):
        return
    else:
        try:
            if type(object.__getattribute__(value, "__dict__")) is not dict:
                return
        except AttributeError:
            return
        kind = "instance"
    seal_container(seal, value, kind, label, depth, seen)


def seal_container(seal: Seal, obj, kind: str, label: str, depth: int, seen: set) -> None:
    """Record a container's contents and walk what it holds."""
    keys, values = container_contents(obj, kind)
    seal.containers.append((obj, kind, keys, values, label))
    for j, item in enumerate(values):
        key = keys[j] if j < len(keys) else None
        seal_walk(seal, "%s.%s" % (label, key) if type(key) is str else label + "[]", item, depth - 1, seen)


SEAL = ()  # harness_seal's record, made by the server before any template is forked (seal_harness)


def seal_harness() -> None:
    """Make SEAL in the server: first load what templates would otherwise load (so their first use
    changes no sealed module) and the C functions restrict_to and prctl call."""
    global SEAL
    import dis, inspect, importlib, operator, re  # noqa: F401,E401
    libc().syscall, libc().prctl  # (ctypes caches each function in the library's namespace when first used)
    SEAL = harness_seal()


def harness_seal() -> tuple:
    """Record, before any program runs, everything a template and its instances rely on once one has:
    the harness's globals (their functions' code, defaults and closures, classes' namespaces, what
    containers, bound methods and instances hold, SEAL_DEPTH levels down), each SEALED_MODULES entry of
    sys.modules and its namespace (for sys, SYS_SEALED only) two levels down. Returns (verify_seal, its
    code, its defaults, the Seal), or () without HARDEN; the seal holds the objects themselves, so none
    can be freed and its address taken by an impostor."""
    if not HARDEN or not CONFIG.get("seal", True):
        return ()
    seal, seen = Seal(), set()
    seal_container(seal, globals(), "globals", "globals", SEAL_DEPTH + 1, seen)
    seal_container(seal, SEALED_MODULES, "modules", "sys.modules", 1, seen)
    seal_container(seal, SYS_SEALED, "sys", "sys", 3, seen)
    for name in SEALED_MODULES:
        mod = sys.modules.get(name)
        if mod is not None and name != "sys":
            seal_container(seal, mod, "instance", name, 3, seen)
    return (verify_seal, verify_seal.__code__, verify_seal.__defaults__, seal)


def verify_seal(seal: tuple, std: tuple, _collect=gc.collect, _sys=sys, _object_attr=object.__getattribute__, _type=type, _map=map, _all=all, _len=len, _is=__import__("operator").is_,
                _contents=container_contents, _contents_code=container_contents.__code__, _modules=sys.modules,
                _tainted=TemplateTainted, _getcode=type(harden_child).__dict__["__code__"].__get__,
                _getdefaults=type(harden_child).__dict__["__defaults__"].__get__,
                _getkwdefaults=type(harden_child).__dict__["__kwdefaults__"].__get__) -> None:
    """Raise TemplateTainted naming the first thing the program changed since harness_seal, or in the
    template's sys.stdout, stderr and stdin (std, read before the program ran): the types of
    every object first (so no container whose class changed is read), then every container's keys and
    values, then every function's code and defaults, each compared by identity (never ==, which generated
    code may define), in loops that run in C. The program's garbage is collected first, so its finalizers
    have run; every builtin used is bound as a default, so none the program rebound is called."""
    _collect()
    s, d = seal[3], _object_attr(_sys, "__dict__")
    if d.get("stdout") is not std[0] or d.get("stderr") is not std[1] or d.get("stdin") is not std[2]:
        raise _tainted("the program replaced the harness's sys.stdout, sys.stderr or sys.stdin when it loaded")
    if _contents.__code__ is not _contents_code:
        raise _tainted("the program changed the harness's own functions when it loaded")
    if not _all(_map(_is, s.types, _map(_type, s.objects))):
        where = next(j for j, o in enumerate(s.objects) if _type(o) is not s.types[j])
        raise _tainted("the program changed the class of the harness's %s when it loaded" % (s.object_labels[where],))
    for obj, kind, keys, values, label in s.containers:
        now_keys, now_values = _contents(obj, kind)
        if (_len(now_keys) != _len(keys) or _len(now_values) != _len(values) or not _all(_map(_is, now_keys, keys))
                or not _all(_map(_is, now_values, values))):
            raise _tainted("the program changed the harness's %s when it loaded (an env may not reach the sandbox's own state)" % (label,))
    for fn, code, defaults, kwdefaults, label in s.functions:
        if _getcode(fn) is not code or _getdefaults(fn) is not defaults or _getkwdefaults(fn) is not kwdefaults:
            raise _tainted("the program changed the harness's %s when it loaded (an env may not reach the sandbox's own state)" % (label,))

# ---------------------------------------------------------------- processes that left the tree

# True where the server's parent is a PID namespace's init (bwrap, namespaces), so that every process
# that left its program's tree (a daemon that called setsid, the orphan of a double fork) becomes that
# init's child (worker.go; the landlock layer's init, a subreaper, kills its own: killDetached)
SWEEP: bool = CONFIG.get("sweep", False)


def kill_detached() -> None:
    """Kill every child of the layer's init but this server: a process of a program that detached
    itself from its template's tree, where neither its episode's CPU seconds nor the program's kill
    would find it. The server calls this twice a second while programs run, so a detached process
    lives half a second at most. Off without SWEEP or HARDEN."""
    if not SWEEP or not HARDEN:
        return
    init, me = os.getppid(), os.getpid()
    children = []
    try:
        for tid in os.listdir("/proc/%d/task" % init):  # (an orphan may be given to any of the init's threads)
            try:
                with open("/proc/%d/task/%s/children" % (init, tid)) as f:
                    children += f.read().split()
            except OSError:
                continue
    except OSError:
        return
    for pid in children:
        if int(pid) != me:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass



# ---------------------------------------------------------------- numpy, confined to computing

# numpy is on the import allowlist for its arrays and math. What else it offers reaches files with no
# open (memmap, save/load, loadtxt/savetxt, genfromtxt, fromfile, DataSource), pickles (load, the ma
# module), strings run as code (testing's helpers, f2py, safe_eval), C memory (ctypeslib, frombuffer,
# lib.stride_tricks.as_strided) and the build system (distutils, f2py). A hardened program's module gets
# NUMPY_VIEW instead of numpy: a module of its own holding only numpy's public names outside
# NUMPY_WITHHELD (no submodule but the views of NUMPY_SUBMODULES). The static check applies the same
# lists (numpy_attr_problem), so both layers refuse the same spellings.
NUMPY_SUBMODULES = ("linalg", "random", "fft", "emath")
NUMPY_WITHHELD = frozenset({
    "memmap", "save", "savez", "savez_compressed", "load", "loadtxt", "savetxt", "genfromtxt", "fromfile",
    "fromregex", "frombuffer", "DataSource", "recfromcsv", "recfromtxt", "mafromtxt", "ndfromtxt",
    "ctypeslib", "lib", "testing", "test", "f2py", "distutils", "compat", "core", "ma", "rec", "char",
    "matlib", "typing", "array_api", "show_config", "show_runtime", "info", "source", "lookfor", "who",
    "get_include", "safe_eval", "deprecate", "deprecate_with_doc", "byte_bounds", "add_newdoc",
    "add_docstring", "add_newdoc_ufunc", "disp", "set_string_function", "from_dlpack",
})
NUMPY_VIEW = None  # the top-level view, made once per template (numpy_view)


def numpy_allows(name: str) -> bool:
    """Whether a program may use numpy's attribute name (at the top level or in an offered submodule)."""
    return not name.startswith("_") and name not in NUMPY_WITHHELD


def numpy_view():
    """The module a hardened program gets for numpy: numpy's offered names, and a view of each offered
    submodule built the same way (a submodule of a submodule is left out)."""
    global NUMPY_VIEW
    if NUMPY_VIEW is not None:
        return NUMPY_VIEW
    import importlib
    import types
    real = importlib.import_module("numpy")
    try:  # an array's .ctypes hands out the ctypes module; numpy falls back to a stand-in without it
        importlib.import_module("numpy.core._internal").ctypes = None
    except (ImportError, AttributeError):
        pass

    def view(module, name: str, top: bool):
        # (not named numpy: a from-import of a missing name falls back to sys.modules["<__name__>.<name>"])
        out = types.ModuleType(name + " (sandboxed)", "numpy's arrays and math, as a sandboxed program sees them")
        for attr, value in list(vars(module).items()):  # (no deprecated alias of numpy's module __getattr__)
            if not numpy_allows(attr):
                continue
            if isinstance(value, types.ModuleType):
                if not top or attr not in NUMPY_SUBMODULES or not value.__name__.startswith("numpy."):
                    continue
                value = view(value, name + "." + attr, False)
            setattr(out, attr, value)
        return out

    NUMPY_VIEW = view(real, "numpy", True)
    return NUMPY_VIEW


def numpy_import(name: str, fromlist, real) -> object:
    """What a hardened program's import of numpy or numpy.<sub> returns: the view, or an offered
    submodule's view when fromlist names what to take from it. Any other numpy submodule is imported
    (numpy's C code imports its own submodules through the calling frame's __import__ and then reads
    sys.modules, never what __import__ returned) and the program gets the top-level view, which holds
    none of them: `from numpy.lib import stride_tricks` fails as a missing name."""
    top = numpy_view()
    if name == "numpy":
        return top
    sub = name[len("numpy."):]
    if sub in NUMPY_SUBMODULES:
        return getattr(top, sub) if fromlist else top
    real(name)
    return top


def numpy_attr_problem(module, attr: str) -> str:
    """The static check's numpy rule: the problem with attribute attr of module (a module object, or
    the dotted name of an imported one), or "" when the view offers it or the module is not numpy's."""
    import types
    name = module if isinstance(module, str) else getattr(module, "__name__", "")
    if not isinstance(name, str) or name.partition(".")[0] != "numpy":
        return ""
    real = sys.modules.get("numpy")
    offered = {"numpy": real}
    for sub in NUMPY_SUBMODULES:
        offered["numpy." + sub] = getattr(real, sub, None)
    shown = next((k for k, v in offered.items() if (v is module if not isinstance(module, str) else k == module)), "")
    if not shown:
        return "%s is not offered to an env (numpy's arrays and math only)" % name
    if not numpy_allows(attr):
        return "%s.%s is not offered to an env (numpy's arrays and math only: no files, pickles, C memory or code from strings)" % (shown, attr)
    target = offered[shown]
    value = getattr(target, attr, None) if target is not None else None
    if isinstance(value, types.ModuleType) and not (shown == "numpy" and attr in NUMPY_SUBMODULES):
        return "%s.%s is not offered to an env (numpy's arrays and math only)" % (shown, attr)
    return ""


def shared_mappings() -> list:
    """The writable shared memory maps of this process (/proc/self/maps), a template's memory that every
    episode forked from it would share."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return []
    out = []
    for line in lines:
        parts = line.split(None, 5)
        if len(parts) >= 2 and parts[1][1] == "w" and parts[1][3] == "s":
            out.append(parts[5] if len(parts) > 5 else "(anonymous)")
    return out


class InvalidText(ValueError):
    """Raised in an instance for an observation or info holding a NUL character: readers of the lake
    (C strings, terminals, some Parquet readers) would cut or garble it. Invalid UTF-8 cannot reach the
    lake: lone surrogates are refused when a reply is encoded, and Go decodes replies as UTF-8."""


NUL_ESCAPE = None  # re.compile: a JSON \u0000 escape not itself escaped, once


def refuse_text(what: str):
    """Raise InvalidText for what (an observation or an info)."""
    raise InvalidText("the env's %s contains a NUL character (\\x00), which is not allowed in text it returns" % what)


def checked_info(text: str) -> str:
    """text, an info encoded as JSON, unless a string in it holds a NUL (InvalidText)."""
    global NUL_ESCAPE
    if "\\u0000" not in text:
        return text
    if NUL_ESCAPE is None:
        import re
        NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")
    if NUL_ESCAPE.search(text):
        refuse_text("info")
    return text


def reset_gate_probe(self) -> object:
    """The gate's reset-gate probe on a tools instance (bound on ToolUseBaseEnv as
    _spade_reset_gate_probe, called through the eval op): None when the instance has no
    _message_criteria or its _state is None, else whether calling one of the criteria on the state
    raises. Defined here, last, so that the harness's earlier line numbers stay."""
    criteria, state = getattr(self, "_message_criteria", None), getattr(self, "_state", None)
    if not criteria or state is None:
        return None
    for criterion in criteria:
        try:
            criterion(state)
        except Exception:  # noqa: BLE001 - a generated criterion may raise anything
            return True
    return False


ToolUseBaseEnv._spade_reset_gate_probe = reset_gate_probe

if __name__ == "__main__":
    main()
