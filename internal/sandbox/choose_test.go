package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/testenv"
)

// pythonWithoutSite writes a python3 into a fresh directory that runs the system interpreter without its
// site packages (-S: no dist-packages, so no numpy), as a version manager's bare interpreter is.
func pythonWithoutSite(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	script := "#!/bin/sh\nexec " + SystemPython + " -S \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "python3"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestChoosePython: python3 on PATH is kept when it has the modules; when it lacks them and Debian's
// has them, Debian's is taken and the note names both and the missing module; when neither has them,
// python3 on PATH stays (its missing module is reported where it is needed).
func TestChoosePython(t *testing.T) {
	testenv.Require(t, len(missingModules(context.Background(), SystemPython, TrainerModules)) == 0,
		"%s needs numpy and torch (python3-numpy, python3-torch)", SystemPython)
	ctx := context.Background()
	bare := pythonWithoutSite(t)
	t.Setenv("PATH", bare+":"+os.Getenv("PATH"))
	if got := missingModules(ctx, filepath.Join(bare, "python3"), TrainerModules); len(got) != 2 {
		t.Fatalf("the bare interpreter is missing %v, want numpy and torch", got)
	}
	for _, needs := range [][]string{SandboxModules, TrainerModules} {
		c := choosePython(ctx, "python3", SystemPython, needs)
		if c.Name != SystemPython || !strings.Contains(c.Note, filepath.Join(bare, "python3")+" (the first python3 on PATH) lacks numpy") ||
			!strings.Contains(c.Note, "using "+SystemPython) || !strings.Contains(c.Note, "SPADE_PYTHON") {
			t.Errorf("needs %v: %+v; want %s with a note naming both", needs, c, SystemPython)
		}
	}
	if c := choosePython(ctx, "python3", SystemPython, nil); c.Name != "python3" || c.Note != "" {
		t.Errorf("no needs: %+v, want python3 on PATH", c)
	}
	// Neither has the module: python3 on PATH stays, with no note.
	if c := choosePython(ctx, "python3", SystemPython, []string{"no_such_module_x"}); c.Name != "python3" || c.Note != "" {
		t.Errorf("a module nobody has: %+v, want python3 on PATH", c)
	}
	// python3 on PATH that is Debian's, or has the modules: kept as it is.
	t.Setenv("PATH", filepath.Dir(SystemPython)+":"+os.Getenv("PATH"))
	if c := choosePython(ctx, "python3", SystemPython, TrainerModules); c.Name != "python3" || c.Note != "" {
		t.Errorf("python3 on PATH with the modules: %+v", c)
	}
}
