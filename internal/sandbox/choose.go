package sandbox

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// SystemPython is Debian's interpreter, whose apt packages (python3-numpy, python3-torch) are what the
// sandbox and the trainer need; the Makefile runs everything with it when it exists.
const SystemPython = "/usr/bin/python3"

// SandboxModules are the modules a generated program may need from the interpreter; TrainerModules
// those the trainer needs.
var (
	SandboxModules = []string{"numpy"}
	TrainerModules = []string{"numpy", "torch"}
)

// Choice is the default interpreter picked for a need: Name is what to run, Note the one line saying why
// when it is not python3 on PATH ("" when it is).
type Choice struct {
	Name string
	Note string
}

var (
	choiceMu sync.Mutex
	choices  = map[string]Choice{}
)

// ChoosePython picks the interpreter to use when neither SPADE_PYTHON nor a config key names one, as
// the Makefile does: python3 on PATH when it has every module of needs, else SystemPython when that has
// them, else python3 on PATH (whose missing module is then reported where it is needed). The first pick
// of each need that is not python3 on PATH is logged once, naming both. It is decided once per process,
// need and PATH, by asking each interpreter whether the modules are installed (no module is imported).
func ChoosePython(ctx context.Context, needs []string) Choice {
	key := strings.Join(needs, ",") + "\x00" + os.Getenv("PATH")
	choiceMu.Lock()
	defer choiceMu.Unlock()
	if c, ok := choices[key]; ok {
		return c
	}
	c := choosePython(ctx, "python3", SystemPython, needs)
	if c.Note != "" {
		slog.Warn(c.Note)
	}
	choices[key] = c
	return c
}

// choosePython is ChoosePython's rule between the interpreter on PATH (a name) and the system one (a path).
func choosePython(ctx context.Context, onPath, system string, needs []string) Choice {
	first, err := exec.LookPath(onPath)
	if err == nil {
		missing := missingModules(ctx, first, needs)
		if len(missing) == 0 {
			return Choice{Name: onPath}
		}
		if same(first, system) || len(missingModules(ctx, system, needs)) > 0 {
			return Choice{Name: onPath}
		}
		return Choice{Name: system, Note: fmt.Sprintf("python: %s (the first %s on PATH) lacks %s: using %s, which has them (set %s to choose another)",
			first, onPath, strings.Join(missing, " and "), system, PythonEnv)}
	}
	if len(missingModules(ctx, system, needs)) == 0 {
		return Choice{Name: system, Note: fmt.Sprintf("python: no %s on PATH: using %s (set %s to choose another)", onPath, system, PythonEnv)}
	}
	return Choice{Name: onPath}
}

// missingModules lists the modules of needs the interpreter at path cannot find (all of them when it
// does not run).
func missingModules(ctx context.Context, path string, needs []string) []string {
	if len(needs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	script := "import importlib.util,sys\nfor m in sys.argv[1:]:\n    if importlib.util.find_spec(m) is None: print(m)\n"
	cmd := exec.CommandContext(ctx, path, append([]string{"-c", script}, needs...)...)
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		return needs
	}
	return strings.Fields(string(out))
}

// same reports whether two interpreter paths are one file (a symlink or a hard link to it included).
func same(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}
