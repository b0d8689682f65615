package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// PythonEnv is the environment variable that overrides the interpreter (default: DefaultPython).
const PythonEnv = "SPADE_PYTHON"

// Python describes a resolved interpreter.
type Python struct {
	// Requested is what was asked for (a name on PATH or a path).
	Requested string
	// Executable is the real interpreter: symlinks and version-manager shims resolved.
	Executable string
	// Version is the interpreter's version, e.g. 3.11.2.
	Version string
	// Prefixes are sys.prefix and sys.base_prefix (the sandbox must see them).
	Prefixes []string
}

var (
	pythonMu    sync.Mutex
	pythonCache = map[string]*Python{}
)

// DefaultPython returns the sandbox's interpreter setting: $SPADE_PYTHON if set, else the choice of
// ChoosePython for SandboxModules (python3 on PATH, or SystemPython when only that has numpy).
func DefaultPython() string {
	if p := os.Getenv(PythonEnv); p != "" {
		return p
	}
	return ChoosePython(context.Background(), SandboxModules).Name
}

// ResolvePython resolves name (a command on PATH or a path; "" means DefaultPython) to the real
// executable, once per name: asking the interpreter for os.path.realpath(sys.executable) sees
// through version-manager shims, which otherwise cost tens of milliseconds per start.
func ResolvePython(ctx context.Context, name string) (*Python, error) {
	if name == "" {
		name = DefaultPython()
	}
	pythonMu.Lock()
	defer pythonMu.Unlock()
	if p, ok := pythonCache[name]; ok {
		return p, nil
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("sandbox: python %q not found: %w (set %s to an interpreter)", name, err, PythonEnv)
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-c",
		"import json,os,sys,platform;print(json.dumps([os.path.realpath(sys.executable),platform.python_version(),sys.prefix,sys.base_prefix]))")
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C.UTF-8"}
	if home, ok := os.LookupEnv("HOME"); ok {
		cmd.Env = append(cmd.Env, "HOME="+home) // shims (pyenv) look for their root under HOME
	}
	if root, ok := os.LookupEnv("PYENV_ROOT"); ok {
		cmd.Env = append(cmd.Env, "PYENV_ROOT="+root)
	}
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("sandbox: probing python %q: %w", path, err)
	}
	var fields []string
	if err := json.Unmarshal([]byte(strings.TrimSpace(string(out))), &fields); err != nil || len(fields) != 4 {
		return nil, fmt.Errorf("sandbox: probing python %q: unexpected output %q", path, out)
	}
	p := &Python{Requested: name, Executable: fields[0], Version: fields[1]}
	for _, prefix := range fields[2:] {
		prefix = filepath.Clean(prefix)
		if !contains(p.Prefixes, prefix) {
			p.Prefixes = append(p.Prefixes, prefix)
		}
	}
	pythonCache[name] = p
	return p, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
