package gate

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// sample is one program of testdata/envs or testdata/hostile.
type sample struct {
	Name, Code, Hint, Skill, Attack string
	Setting                         schemas.Setting
	Expect                          []string
}

// readSamples reads every *.py of dir with its sibling .hint and header comments.
func readSamples(t testing.TB, dir string) []sample {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.py"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no programs in %s: %v", dir, err)
	}
	sort.Strings(paths)
	var out []sample
	for _, path := range paths {
		code, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := sample{Name: strings.TrimSuffix(filepath.Base(path), ".py"), Code: string(code), Setting: "games"}
		if hint, err := os.ReadFile(strings.TrimSuffix(path, ".py") + ".hint"); err == nil {
			s.Hint = strings.TrimSpace(string(hint))
		} else {
			s.Hint = "think step by step"
		}
		for _, line := range strings.Split(s.Code, "\n") {
			if !strings.HasPrefix(line, "# ") {
				break
			}
			key, value, _ := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
			switch key {
			case "skill":
				s.Skill = value
			case "setting":
				s.Setting = schemas.Setting(value)
			case "attack":
				s.Attack = value
			case "expect":
				s.Expect = strings.Split(value, "|")
			}
		}
		out = append(out, s)
	}
	return out
}

func repoPath(parts ...string) string {
	return filepath.Join(append([]string{"..", ".."}, parts...)...)
}

func testPython() string {
	if p := os.Getenv(sandbox.PythonEnv); p != "" {
		return p
	}
	if _, err := os.Stat("/usr/bin/python3"); err == nil {
		return "/usr/bin/python3"
	}
	return "python3"
}

// newPool starts a pool for tests, with deadlines a loaded machine does not reach (roomyDeadlines); in CI
// a missing layer fails.
func newPool(t testing.TB, iso sandbox.Isolation) *sandbox.Pool {
	t.Helper()
	return newPoolWith(t, iso, roomyDeadlines)
}

// shortDeadlines gives a pool the short deadlines of a test whose programs run into them on purpose (a
// loop at load, in reset or in step), so that each costs little.
func shortDeadlines(o *sandbox.Options) {
	o.LoadTimeout, o.ResetTimeout, o.StepTimeout = 2*time.Second, 2*time.Second, time.Second
}

// roomyDeadlines gives a pool deadlines that a loaded machine (a load of 10 on 2 cores) does not reach
// for a program that does not run into them on purpose: a test whose verdict is not a timeout uses it,
// so that load cannot turn its verdict into one.
func roomyDeadlines(o *sandbox.Options) {
	o.LoadTimeout, o.ResetTimeout, o.StepTimeout = 30*time.Second, 30*time.Second, 15*time.Second
}

// newPoolWith starts a pool whose options mutate sets (deadlines included); in CI a missing layer fails.
func newPoolWith(t testing.TB, iso sandbox.Isolation, mutate func(*sandbox.Options)) *sandbox.Pool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := sandbox.Options{
		Python: testPython(), Isolation: iso, Workers: 2,
		LoadTimeout: 2 * time.Second, ResetTimeout: 2 * time.Second, StepTimeout: time.Second,
		CPUSeconds: 10, AddressSpace: 512 << 20, WorkerMemoryLimit: 1 << 30,
	}
	mutate(&opts)
	p, err := sandbox.NewPool(ctx, opts)
	if err != nil {
		t.Fatalf("sandbox pool (%s): %v", iso, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}
