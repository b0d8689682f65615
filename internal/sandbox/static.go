package sandbox

import "context"

// DefaultAllowedImports is the import allowlist of the static check (DESIGN §7): the standard
// library modules an environment program needs, plus numpy and sympy (usable where installed;
// a missing one fails at load with ImportError).
var DefaultAllowedImports = []string{
	"math", "random", "itertools", "collections", "re", "json", "fractions", "decimal", "heapq",
	"functools", "string", "statistics", "dataclasses", "typing", "enum", "copy", "bisect", "abc",
	"numpy", "sympy",
}

// DefaultFlaggedNames are names the static check rejects wherever they appear (as a name or an
// attribute), besides dunder names and getattr-family calls with computed or private names.
var DefaultFlaggedNames = []string{
	"eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "breakpoint",
	"input", "exit", "quit", "help", "memoryview", "os", "sys", "subprocess", "socket", "ctypes",
	"importlib", "builtins", "signal", "threading", "multiprocessing", "shutil", "pathlib", "io",
	"pickle", "marshal", "gc", "inspect", "resource", "fcntl", "pty", "select", "mmap",
	"system", "popen", "fork", "spawn", "kill", "_exit",
}

// StaticCheck runs the static checks with the default lists; setting is games or tools.
// It returns the problems found, empty when the program passes. Generated code is parsed
// in a sandboxed child, never in this process or the worker's server.
func (p *Pool) StaticCheck(ctx context.Context, code, setting string) ([]string, error) {
	return p.Check(ctx, code, setting, DefaultAllowedImports, DefaultFlaggedNames)
}
