package docs

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is the module path every package of the repository starts with.
const module = "github.com/spadekit/spade/"

// goPackage is what `go list` says of one package: its path relative to the module and the module's
// packages its code (not its tests) imports.
type goPackage struct {
	path    string
	imports []string
}

// listPackages runs `go list` over the repository and returns every package with its imports of the
// module's own packages (relative paths).
func listPackages(t *testing.T) []goPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \",\"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	own := func(list string) []string {
		var paths []string
		for _, p := range strings.Split(list, ",") {
			if rel, ok := strings.CutPrefix(p, module); ok {
				paths = append(paths, rel)
			}
		}
		return paths
	}
	var pkgs []goPackage
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Split(line, "|")
		if len(fields) != 2 {
			t.Fatalf("go list line %q", line)
		}
		path, _ := strings.CutPrefix(fields[0], module)
		if fields[0] == strings.TrimSuffix(module, "/") {
			path = "."
		}
		pkgs = append(pkgs, goPackage{path: path, imports: own(fields[1])})
	}
	return pkgs
}

// isStage reports whether path is a stage package: below stages/, but not the contract (stages/stage)
// nor the composition layer (stages/run, the step runner, stages/cluster, the executors above it, and
// stages/lab, which runs whole steps of a lab world).
func isStage(path string) bool {
	rest, ok := strings.CutPrefix(path, "stages/")
	if !ok {
		return false
	}
	top, _, _ := strings.Cut(rest, "/")
	return !slices.Contains([]string{"stage", "run", "cluster", "lab"}, top)
}

// stageOf is the stage a stage package belongs to (stages/grpo for stages/grpo/x).
func stageOf(path string) string {
	rest := strings.TrimPrefix(path, "stages/")
	top, _, _ := strings.Cut(rest, "/")
	return "stages/" + top
}

// isTestHelper reports whether path is a package that exists for tests (laketest, llmtest, s3test, ...):
// its name ends in "test", or it is internal/testenv.
func isTestHelper(path string) bool {
	base := path[strings.LastIndex(path, "/")+1:]
	return strings.HasSuffix(base, "test") || path == "internal/testenv"
}

// The import rules architecture.md states, checked on `go list`'s import graph: no stage imports
// another stage (only stages/stage, the contract); nothing under internal/ or schemas/ imports anything
// under stages/; only the composition layer (stages/run, stages/cluster, stages/lab) and cmd/ import the stages; and
// the test helpers are imported by tests and other test helpers only.
func TestImportLayering(t *testing.T) {
	pkgs := listPackages(t)
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages; the check would be empty", len(pkgs))
	}
	composition := func(p string) bool {
		return strings.HasPrefix(p, "stages/run") || strings.HasPrefix(p, "stages/cluster") || strings.HasPrefix(p, "stages/lab") || strings.HasPrefix(p, "cmd/")
	}
	for _, p := range pkgs {
		for _, imp := range p.imports {
			switch {
			case isStage(imp) && isStage(p.path) && stageOf(imp) != stageOf(p.path):
				t.Errorf("stage %s imports stage %s: stages meet only through the lake and stages/stage", p.path, imp)
			case strings.HasPrefix(imp, "stages/") && (strings.HasPrefix(p.path, "internal/") || strings.HasPrefix(p.path, "schemas")):
				t.Errorf("%s imports %s: nothing under internal/ or schemas/ knows a stage", p.path, imp)
			case isStage(imp) && !isStage(p.path) && !composition(p.path):
				t.Errorf("%s imports stage %s: only stages/run, stages/cluster, stages/lab and cmd/ compose the stages", p.path, imp)
			case isTestHelper(imp) && !isTestHelper(p.path):
				t.Errorf("%s imports the test helper %s outside its tests", p.path, imp)
			}
		}
	}
}
