# attack: deep recursion past the C stack
# expect: RecursionError|crash|SIGSEGV|memory|timeout
import sys


def dive(n):
    return dive(n + 1) + 1


class Deep:
    def reset(self, seed):
        return "start"

    def step(self, action):
        sys.setrecursionlimit(10 ** 8)
        return "x", float(dive(0)), True, {}
