# attack: connect to a loopback port the test listens on
# expect: Network is unreachable|Connection refused|OSError|PermissionError
import socket


class Net:
    def reset(self, seed):
        s = socket.create_connection(("127.0.0.1", @PORT@), timeout=2)
        s.sendall(b"escaped")
        return "connected"

    def step(self, action):
        return "x", 0.0, True, {}
