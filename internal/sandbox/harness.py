"""spade sandbox harness: a fork server for generated environment programs.

Standard library only. It runs inside the isolation layer (bwrap or the namespace init) as an
unprivileged uid and never executes generated code itself: every program runs in a forked child.

Wire protocol (JSON lines):
  Go -> server on fd 3, server -> Go on fd 4. Generated code never holds these fds: a child
  closes them before any generated code runs, so a print() or a write to any fd in generated
  code cannot forge or corrupt a reply to Go.
  server <-> child on a private socketpair (fd 3 in the child). The child's stdout/stderr go to
  a pipe that the server drains, caps and returns in the "out" field of replies.

Requests: {"id": N, "op": OP, ...}; replies {"id": N, "ok": true, ...} or
{"id": N, "ok": false, "kind": KIND, "error": MSG, "out": CAPTURED}. KIND is one of
env, timeout, memory, crash, protocol, output.
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
GO_IN, GO_OUT = 3, 4
MAX_LINE = 8 * OBS_CAP + 2 * INFO_CAP + 65536
MODULE_NAME = "env_program"


def set_limit(which: int, soft: int, hard: int) -> None:
    """Lower one rlimit; a value above the current hard limit is clamped to it."""
    _, cur_hard = resource.getrlimit(which)
    if cur_hard != resource.RLIM_INFINITY:
        soft = min(soft, cur_hard)
        hard = min(hard, cur_hard)
    resource.setrlimit(which, (soft, hard))


# ---------------------------------------------------------------- static check


def static_check(code: str, setting: str, allow: list, flagged: list) -> list:
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
    classes = []
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            methods = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
            if "reset" in methods and "step" in methods:
                classes.append((node, methods))
    if len(classes) != 1:
        problems.append("expected exactly one class with reset() and step(), found %d" % len(classes))
    elif setting == "tools" and "tools" not in classes[0][1]:
        problems.append("class %s has no tools() method (required in the tools setting)" % classes[0][0].name)
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
            elif node.attr.startswith("_") and isinstance(node.value, ast.Name) and node.value.id in flagged_names:
                problems.append("line %d: attribute %r is not allowed" % (line, node.attr))
            elif node.attr in flagged_names:
                problems.append("line %d: attribute %r is not allowed" % (line, node.attr))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            v = node.value
            if v.startswith("__") and v.endswith("__") and len(v) > 4 and v not in ok_dunders:
                problems.append("line %d: dunder string %r is not allowed" % (line, v))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in attr_calls:
            name = node.args[1] if len(node.args) > 1 else None
            if not (isinstance(name, ast.Constant) and isinstance(name.value, str) and not name.value.startswith("_")):
                problems.append("line %d: %s() with a computed or private name is not allowed" % (line, node.func.id))
    return problems


# ---------------------------------------------------------------- child side


class OutputTooLarge(Exception):
    """Raised in a child when an observation or info exceeds its cap."""


def child_send(sock: socket.socket, msg: dict) -> None:
    """Write one JSON line to the server."""
    sys.stdout.flush()
    sys.stderr.flush()
    sock.sendall(json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n")


def load_program(code: str):
    """Execute the program as a module and return its single env class."""
    module = {"__name__": MODULE_NAME, "__builtins__": __builtins__}
    compiled = compile(code, "<env>", "exec")
    exec(compiled, module)
    found = [
        v for v in module.values()
        if isinstance(v, type) and getattr(v, "__module__", None) == MODULE_NAME
        and callable(getattr(v, "reset", None)) and callable(getattr(v, "step", None))
    ]
    if len(found) != 1:
        raise ValueError("expected exactly one class with reset() and step(), found %d" % len(found))
    return found[0]


def error_reply(seq: int, e: BaseException) -> dict:
    """Map an exception raised by generated code to a typed reply."""
    kind = "env"
    if isinstance(e, MemoryError):
        kind = "memory"
    elif isinstance(e, OutputTooLarge):
        kind = "output"
    tb = traceback.format_exception(type(e), e, e.__traceback__)
    text = "".join(tb[-6:])
    if len(text) > 4000:
        text = text[-4000:]
    return {"seq": seq, "ok": False, "kind": kind, "error": "%s: %s" % (type(e).__name__, str(e)[:500]), "trace": text}


def check_obs(obs) -> str:
    """Validate an observation: a str within the cap."""
    if not isinstance(obs, str):
        raise TypeError("observation must be str, got %s" % type(obs).__name__)
    if len(obs) > OBS_CAP or len(obs.encode("utf-8", "surrogatepass")) > OBS_CAP:
        raise OutputTooLarge("observation of %d characters exceeds the cap of %d bytes" % (len(obs), OBS_CAP))
    return obs


def child_main(code: str, instantiate: bool) -> None:
    """Serve one env instance: load, optionally instantiate, then answer ops until close."""
    sock = socket.socket(fileno=3)
    reader = sock.makefile("rb")
    try:
        cls = load_program(code)
    except BaseException as e:  # noqa: BLE001 - generated code may raise anything
        child_send(sock, error_reply(0, e))
        return
    has_tools = callable(getattr(cls, "tools", None))
    if not instantiate:
        child_send(sock, {"seq": 0, "ok": True, "class": cls.__name__, "has_tools": has_tools})
        return
    try:
        env = cls()
    except BaseException as e:  # noqa: BLE001
        child_send(sock, error_reply(0, e))
        return
    child_send(sock, {"seq": 0, "ok": True, "class": cls.__name__, "has_tools": has_tools})
    while True:
        line = reader.readline(MAX_LINE)
        if not line:
            return
        req = json.loads(line)
        seq, op = req["seq"], req["op"]
        try:
            if op == "reset":
                obs = check_obs(env.reset(int(req["seed"])))
                child_send(sock, {"seq": seq, "ok": True, "obs": obs})
            elif op == "step":
                result = env.step(req["action"])
                if not isinstance(result, tuple) or len(result) != 4:
                    raise TypeError("step must return a 4-tuple (obs, reward, done, info), got %s" % type(result).__name__)
                obs, reward, done, info = result
                obs = check_obs(obs)
                if isinstance(reward, bool) or not isinstance(reward, (int, float)):
                    try:
                        reward = float(reward)
                    except Exception:
                        raise TypeError("reward must be a number, got %s" % type(reward).__name__) from None
                reward = float(reward)
                if not math.isfinite(reward):
                    raise ValueError("reward must be finite, got %r" % reward)
                if not isinstance(done, (bool, int)):
                    raise TypeError("done must be bool, got %s" % type(done).__name__)
                if info is None:
                    info = {}
                if not isinstance(info, dict):
                    raise TypeError("info must be a dict, got %s" % type(info).__name__)
                info_text = json.dumps(info, default=repr, allow_nan=False)
                if len(info_text) > INFO_CAP:
                    raise OutputTooLarge("info of %d bytes exceeds the cap of %d" % (len(info_text), INFO_CAP))
                child_send(sock, {"seq": seq, "ok": True, "obs": obs, "reward": reward, "done": bool(done), "info": json.loads(info_text)})
            elif op == "tools":
                tools = env.tools()
                text = json.dumps(tools, default=repr, allow_nan=False)
                if len(text) > INFO_CAP:
                    raise OutputTooLarge("tools() of %d bytes exceeds the cap of %d" % (len(text), INFO_CAP))
                child_send(sock, {"seq": seq, "ok": True, "tools": json.loads(text)})
            elif op == "eval":
                # evaluate a named zero-argument method, used by the gate for success conditions
                fn = getattr(env, req["method"])
                value = fn(*req.get("args", []))
                text = json.dumps(value, default=repr, allow_nan=False)
                if len(text) > INFO_CAP:
                    raise OutputTooLarge("result of %d bytes exceeds the cap of %d" % (len(text), INFO_CAP))
                child_send(sock, {"seq": seq, "ok": True, "value": json.loads(text)})
            else:
                child_send(sock, {"seq": seq, "ok": False, "kind": "protocol", "error": "unknown op %r" % op})
        except BaseException as e:  # noqa: BLE001
            child_send(sock, error_reply(seq, e))


def child_check(req: dict) -> None:
    """Serve a static check in a child (parsing hostile input never happens in the server)."""
    sock = socket.socket(fileno=3)
    problems = static_check(req["code"], req.get("setting", "games"), req.get("allow", []), req.get("flagged", []))
    child_send(sock, {"seq": 0, "ok": True, "problems": problems})


# ---------------------------------------------------------------- server side


class Child:
    """The server's record of one forked child."""

    def __init__(self, pid: int, sock: socket.socket, out_fd: int, go_id: int, op: str):
        self.pid = pid
        self.sock = sock
        self.out_fd = out_fd
        self.buf = b""
        self.seq = 0
        self.pending = go_id  # Go request id waiting on this child, or None
        self.pending_op = op
        self.out = bytearray()  # captured output not yet returned (tail, capped)
        self.out_total = 0
        self.dead = False
        self.oneshot = op in ("load", "check")


class Server:
    """The fork server: reads requests from Go, forks children, relays replies."""

    def __init__(self) -> None:
        self.sel = selectors.DefaultSelector()
        self.children: dict = {}  # env id -> Child
        self.by_sock: dict = {}
        self.by_out: dict = {}
        self.programs: dict = {}  # prog id -> code
        self.go_buf = b""
        self.devnull = os.open("/dev/null", os.O_RDONLY)

    def send_go(self, msg: dict) -> None:
        data = json.dumps(msg, separators=(",", ":")).encode("utf-8") + b"\n"
        view = memoryview(data)
        while view:
            n = os.write(GO_OUT, view)
            view = view[n:]

    def fork_child(self, key, go_id: int, op: str, target) -> None:
        psock, csock = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        out_r, out_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                os.setpgid(0, 0)
                signal.signal(signal.SIGPIPE, signal.SIG_DFL)
                os.dup2(self.devnull, 0)
                os.dup2(out_w, 1)
                os.dup2(out_w, 2)
                os.dup2(csock.fileno(), 3, inheritable=False)
                # fd 4 (replies to Go) and every other server fd close here, before generated code runs
                os.closerange(4, NOFILE + 16)
                set_limit(resource.RLIMIT_NOFILE, CHILD_NOFILE, CHILD_NOFILE)
                set_limit(resource.RLIMIT_AS, AS_BYTES, AS_BYTES)
                set_limit(resource.RLIMIT_CPU, CPU_SECONDS, CPU_SECONDS + 1)
                sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8", errors="replace", line_buffering=False)
                sys.stderr = sys.stdout
                sys.stdin = None
                target()
            except BaseException:  # noqa: BLE001
                code = 70
            finally:
                try:
                    sys.stdout.flush()
                except BaseException:  # noqa: BLE001
                    pass
                os._exit(code)
        csock.close()
        os.close(out_w)
        psock.setblocking(False)
        os.set_blocking(out_r, False)
        child = Child(pid, psock, out_r, go_id, op)
        self.children[key] = child
        self.by_sock[psock.fileno()] = key
        self.by_out[out_r] = key
        self.sel.register(psock, selectors.EVENT_READ, ("child", key))
        self.sel.register(out_r, selectors.EVENT_READ, ("out", key))

    def take_out(self, child: Child) -> str:
        text = bytes(child.out).decode("utf-8", "replace")
        child.out.clear()
        return text

    def drain_out(self, key) -> None:
        child = self.children.get(key)
        if child is None or child.out_fd < 0:
            return
        while True:
            try:
                data = os.read(child.out_fd, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.sel.unregister(child.out_fd)
                del self.by_out[child.out_fd]
                os.close(child.out_fd)
                child.out_fd = -1
                return
            child.out_total += len(data)
            child.out += data
            if len(child.out) > OUT_KEEP:
                del child.out[: len(child.out) - OUT_KEEP]
            if child.out_total > OUT_CAP:
                self.fail_child(key, "output", "env wrote %d bytes to stdout/stderr, over the cap of %d" % (child.out_total, OUT_CAP))
                return

    def reap(self, child: Child, force: bool) -> str:
        """Kill (if force) and reap a child; return how it ended."""
        status = None
        if not force:
            for _ in range(20):
                try:
                    pid, st = os.waitpid(child.pid, os.WNOHANG)
                except ChildProcessError:
                    return "gone"
                if pid:
                    status = st
                    break
                time.sleep(0.0005 * (1 + _))
        if status is None:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                os.kill(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                _, status = os.waitpid(child.pid, 0)
            except ChildProcessError:
                return "gone"
        else:
            try:
                os.killpg(child.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            try:
                name = signal.Signals(sig).name
            except ValueError:
                name = str(sig)
            return "killed by " + name
        return "exited with status %d" % os.WEXITSTATUS(status)

    def remove_child(self, key, force: bool) -> str:
        child = self.children.pop(key, None)
        if child is None:
            return "gone"
        if child.out_fd >= 0:
            self.drain_out_final(child)
        try:
            self.sel.unregister(child.sock)
        except (KeyError, ValueError):
            pass
        self.by_sock.pop(child.sock.fileno(), None)
        child.sock.close()
        how = self.reap(child, force)
        if child.out_fd >= 0:
            try:
                self.sel.unregister(child.out_fd)
            except (KeyError, ValueError):
                pass
            self.by_out.pop(child.out_fd, None)
            os.close(child.out_fd)
            child.out_fd = -1
        return how

    def drain_out_final(self, child: Child) -> None:
        try:
            data = os.read(child.out_fd, 65536)
        except OSError:
            return
        child.out += data
        if len(child.out) > OUT_KEEP:
            del child.out[: len(child.out) - OUT_KEEP]

    def fail_child(self, key, kind: str, msg: str) -> None:
        """Kill a child for misbehaviour; answer its pending Go request with a typed error."""
        child = self.children.get(key)
        if child is None:
            return
        pending = child.pending
        how = self.remove_child(key, force=True)
        if pending is not None:
            self.send_go({"id": pending, "ok": False, "kind": kind, "error": msg + " (" + how + ")", "out": self.take_out(child)})

    def child_ended(self, key) -> None:
        """The child closed its socket: it exited or died."""
        child = self.children.get(key)
        pending = child.pending
        how = self.remove_child(key, force=False)
        if pending is None:
            return
        kind = "crash"
        if "SIGXCPU" in how:
            kind = "timeout"
        elif "SIGXFSZ" in how:
            kind = "output"
        elif "SIGSEGV" in how or "SIGABRT" in how:
            kind = "crash"
        self.send_go({"id": pending, "ok": False, "kind": kind, "error": "env process ended during %s: %s" % (child.pending_op, how), "out": self.take_out(child)})

    def on_child_readable(self, key) -> None:
        child = self.children.get(key)
        if child is None:
            return
        try:
            data = child.sock.recv(262144)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self.drain_out(key)
            if key in self.children:
                self.child_ended(key)
            return
        child.buf += data
        if len(child.buf) > MAX_LINE and b"\n" not in child.buf:
            self.fail_child(key, "protocol", "env sent a line longer than %d bytes" % MAX_LINE)
            return
        while key in self.children and b"\n" in child.buf:
            line, child.buf = child.buf.split(b"\n", 1)
            self.on_child_line(key, line)

    def on_child_line(self, key, line: bytes) -> None:
        child = self.children[key]
        try:
            msg = json.loads(line)
            ok = isinstance(msg, dict) and msg.get("seq") == child.seq and isinstance(msg.get("ok"), bool)
        except ValueError:
            ok = False
        if not ok or child.pending is None:
            self.fail_child(key, "protocol", "env sent an unexpected message")
            return
        self.drain_out(key)
        if key not in self.children:
            return
        msg.pop("seq", None)
        msg["id"] = child.pending
        msg["out"] = self.take_out(child)
        child.pending = None
        if child.oneshot or (child.pending_op == "new" and not msg["ok"]):
            self.remove_child(key, force=True)
        self.send_go(msg)

    def on_request(self, req: dict) -> None:
        rid, op = req.get("id"), req.get("op")
        if op == "ping":
            self.send_go({"id": rid, "ok": True})
        elif op == "check":
            key = ("check", rid)
            self.fork_child(key, rid, op, lambda: child_check(req))
        elif op == "load":
            self.programs[req["prog"]] = req["code"]
            code = req["code"]
            self.fork_child(("load", rid), rid, op, lambda: child_main(code, False))
        elif op == "new":
            code = self.programs.get(req["prog"])
            if code is None:
                self.send_go({"id": rid, "ok": False, "kind": "protocol", "error": "unknown program"})
                return
            env = req["env"]
            if env in self.children:
                self.send_go({"id": rid, "ok": False, "kind": "protocol", "error": "env id in use"})
                return
            try:
                self.fork_child(env, rid, op, lambda: child_main(code, True))
            except OSError as e:
                self.send_go({"id": rid, "ok": False, "kind": "crash", "error": "fork failed: %s" % e})
        elif op in ("reset", "step", "tools", "eval"):
            env = req.get("env")
            child = self.children.get(env)
            if child is None:
                self.send_go({"id": rid, "ok": False, "kind": "protocol", "error": "unknown env %r" % (env,)})
                return
            if child.pending is not None:
                self.send_go({"id": rid, "ok": False, "kind": "protocol", "error": "env busy"})
                return
            child.seq += 1
            child.pending = rid
            child.pending_op = op
            fwd = dict(req)
            fwd.pop("id", None)
            fwd.pop("env", None)
            fwd["seq"] = child.seq
            try:
                child.sock.setblocking(True)
                child.sock.sendall(json.dumps(fwd, separators=(",", ":")).encode("utf-8") + b"\n")
                child.sock.setblocking(False)
            except OSError:
                self.child_ended(env)
        elif op == "close":
            env = req.get("env")
            child = self.children.get(env)
            out = ""
            if child is not None:
                pending = child.pending
                self.remove_child(env, force=True)
                out = self.take_out(child)
                if pending is not None:
                    self.send_go({"id": pending, "ok": False, "kind": "timeout", "error": "env killed during %s" % child.pending_op, "out": out})
            self.send_go({"id": rid, "ok": True, "out": out})
        elif op == "unload":
            self.programs.pop(req.get("prog"), None)
            self.send_go({"id": rid, "ok": True})
        else:
            self.send_go({"id": rid, "ok": False, "kind": "protocol", "error": "unknown op %r" % (op,)})

    def serve(self) -> None:
        os.set_blocking(GO_IN, False)
        self.sel.register(GO_IN, selectors.EVENT_READ, ("go", None))
        while True:
            for sk, _ in self.sel.select():
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
                elif kind == "child":
                    self.on_child_readable(key)
                elif kind == "out":
                    self.drain_out(key)


def main() -> None:
    """Set the server's limits, preload modules, freeze the heap and serve."""
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
    gc.collect()
    gc.freeze()
    server = Server()
    server.send_go({
        "id": 0, "ok": True, "hello": PROTOCOL_VERSION, "python": sys.version.split()[0],
        "executable": sys.executable, "modules": loaded, "uid": os.getuid(), "pid": os.getpid(),
    })
    server.serve()


if __name__ == "__main__":
    main()
