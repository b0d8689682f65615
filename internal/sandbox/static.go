package sandbox

import "context"

// DefaultAllowedImports is the import allowlist of the static check (docs/sandbox.md): the standard
// library modules an environment program needs, plus numpy (usable where installed; a missing one fails
// at load with ImportError). sympy is not on it: nearly every sympy function parses a string argument by
// evaluating it (sympify), a route from a computed string to code that no static check can follow (the
// math scorer, which is ours, still uses it).
var DefaultAllowedImports = []string{
	"math", "random", "itertools", "collections", "re", "json", "fractions", "decimal", "heapq",
	"functools", "string", "statistics", "dataclasses", "typing", "enum", "copy", "bisect", "abc",
	"numpy",
	// admitted for the authors' programs (docs/sandbox.md, "Standard-library modules, one by one"): no
	// route to files, processes, the network or the interpreter's internals. operator is the harness's
	// confined copy, whose attrgetter and methodcaller refuse private and dunder names.
	"operator", "datetime", "time", "textwrap", "cmath", "numbers", "unicodedata", "difflib",
}

// DefaultInjections are the names bound in every program's module before it runs (Options.Inject):
// the authors' loader's common standard-library names (_COMMON_STDLIB_INJECTIONS in
// spade/core/envs/synthetic_game_env.py), so that a program that uses math or deque without importing
// it loads, as it does for them. Every module named is in DefaultAllowedImports (the static check's
// module rules apply to the injected modules as to imported ones); operator is the harness's confined
// copy (its attrgetter and methodcaller refuse private and dunder names), imported or injected.
var DefaultInjections = map[string]string{
	"operator":  "operator",
	"itertools": "itertools", "math": "math", "random": "random", "re": "re", "json": "json",
	"collections": "collections", "functools": "functools", "string": "string", "copy": "copy",
	"heapq": "heapq", "statistics": "statistics", "np": "numpy", "numpy": "numpy",
	"deque": "collections:deque", "defaultdict": "collections:defaultdict", "Counter": "collections:Counter",
	"OrderedDict": "collections:OrderedDict", "namedtuple": "collections:namedtuple",
	"combinations": "itertools:combinations", "permutations": "itertools:permutations",
	"product": "itertools:product", "chain": "itertools:chain", "accumulate": "itertools:accumulate",
	"reduce": "functools:reduce", "lru_cache": "functools:lru_cache", "deepcopy": "copy:deepcopy",
	"heappush": "heapq:heappush", "heappop": "heapq:heappop",
	"Tuple": "typing:Tuple", "Dict": "typing:Dict", "List": "typing:List", "Optional": "typing:Optional",
	"Union": "typing:Union", "Any": "typing:Any", "Set": "typing:Set", "FrozenSet": "typing:FrozenSet",
	"Callable": "typing:Callable", "Iterable": "typing:Iterable", "Sequence": "typing:Sequence",
	"Mapping": "typing:Mapping",
}

// DefaultFlaggedNames are names the static check rejects wherever they appear as a name, besides
// dunder names and getattr-family calls with computed or private names. Other modules need no
// entry: the import allowlist already keeps them out.
var DefaultFlaggedNames = []string{
	"eval", "exec", "compile", "open", "__import__", "globals", "locals", "vars", "breakpoint",
	"input", "exit", "quit", "help", "memoryview", "os", "sys", "subprocess", "socket", "ctypes",
	"importlib", "builtins",
	// the allowed modules' routes from a string to code: typing evaluates string annotations with the
	// real builtins (get_type_hints, ForwardRef), and functools' single dispatch does through them
	"get_type_hints", "ForwardRef", "singledispatch", "singledispatchmethod",
}

// DefaultFlaggedAttributes are attribute names the static check rejects on any object
// (process, file-descriptor and frame access reached through an allowed module or object).
var DefaultFlaggedAttributes = []string{
	"system", "popen", "fork", "forkpty", "spawnv", "spawnl", "spawnvp", "execv", "execve", "execvp",
	"kill", "killpg", "_exit", "dup2", "fdopen", "f_globals", "f_locals", "f_back", "gi_frame",
	"cr_frame", "tb_frame", "co_code", "modules",
	"get_type_hints", "ForwardRef", "singledispatch", "singledispatchmethod", // (DefaultFlaggedNames)
	// numpy's submodules that build and run native code or load C libraries (not preloaded, so the
	// module rules cannot resolve them): f2py compiles Fortran, ctypeslib wraps ctypes
	"f2py", "ctypeslib", "distutils",
	// time's calls that set the system clock (the sandbox holds no capability for them; refused anyway)
	"clock_settime", "clock_settime_ns",
}

// StaticRules are the lists the static check enforces.
type StaticRules struct {
	// AllowedImports are the top-level modules a program may import.
	AllowedImports []string
	// FlaggedNames are names rejected wherever they appear as a name.
	FlaggedNames []string
	// FlaggedAttributes are attribute names rejected on any object.
	FlaggedAttributes []string
}

// DefaultStaticRules returns the default lists.
func DefaultStaticRules() StaticRules {
	return StaticRules{AllowedImports: DefaultAllowedImports, FlaggedNames: DefaultFlaggedNames, FlaggedAttributes: DefaultFlaggedAttributes}
}

// StaticCheck runs the static checks with the default lists; setting is games or tools.
// It returns the problems found, empty when the program passes. Generated code is parsed
// in a sandboxed child, never in this process or the worker's server.
func (p *Pool) StaticCheck(ctx context.Context, code, setting string) ([]string, error) {
	return p.Check(ctx, code, setting, DefaultStaticRules())
}
