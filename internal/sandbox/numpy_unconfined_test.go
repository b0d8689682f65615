package sandbox

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/testenv"
)

// TestNumpyAttacksReachTheirGoalsUnconfined runs each numpy program of testdata/hostile with
// testdata/unconfined_numpy.py (plain Python, the program loaded once, each episode a forked child, as
// the fork server does, with the real builtins and the real numpy) and asserts that it reaches its goal
// there: the routes the sandbox closes are real.
func TestNumpyAttacksReachTheirGoalsUnconfined(t *testing.T) {
	python := os.Getenv("SPADE_PYTHON")
	if python == "" {
		python = "/usr/bin/python3"
	}
	if err := exec.Command(python, "-c", "import numpy").Run(); err != nil {
		testenv.SkipUnlessCI(t, "numpy is not installed for %s", python)
	}
	runner, _ := filepath.Abs("testdata/unconfined_numpy.py")
	cases := []struct {
		program string
		goal    func(t *testing.T, dir string, episodes []map[string]any)
	}{
		{"numpy_testing_runstring", func(t *testing.T, dir string, eps []map[string]any) {
			if !strings.Contains(eps[0]["obs"].(string), "planted-secret") {
				t.Errorf("the planted file was not read: %v", eps)
			}
		}},
		{"numpy_load_pickle_positional", func(t *testing.T, dir string, eps []map[string]any) {
			if b, err := os.ReadFile(filepath.Join(dir, "out", "leak")); err != nil || !strings.Contains(string(b), "planted-secret") {
				t.Errorf("the pickle did not run: %v %q", err, b)
			}
		}},
		{"numpy_memmap_relay", func(t *testing.T, dir string, eps []map[string]any) {
			if eps[1]["obs"] != "relayed: hello" {
				t.Errorf("the second episode did not see the first's action: %v", eps)
			}
		}},
		{"numpy_sparse_fill", func(t *testing.T, dir string, eps []map[string]any) {
			if eps[0]["obs"] != "filled 192 MiB" {
				t.Errorf("the files were not filled: %v", eps)
			}
		}},
		{"numpy_nul_observation", func(t *testing.T, dir string, eps []map[string]any) {
			if !strings.Contains(eps[0]["obs"].(string), "\x00") {
				t.Errorf("no NUL in the observation: %v", eps)
			}
		}},
		{"numpy_as_strided", func(t *testing.T, dir string, eps []map[string]any) {
			if eps[0]["obs"] != "peeked 1 bytes" {
				t.Errorf("no bytes read past the buffer: %v", eps)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.program, func(t *testing.T) {
			dir := t.TempDir()
			planted := filepath.Join(dir, "planted")
			if err := os.WriteFile(planted, []byte("planted-secret\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(filepath.Join(dir, "out"), 0o700); err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", c.program+".py"))
			if err != nil {
				t.Fatal(err)
			}
			code := strings.NewReplacer("@PLANTED_FILE@", planted, "@OUTSIDE_DIR@", filepath.Join(dir, "out")).Replace(string(src))
			prog := filepath.Join(dir, c.program+".py")
			if err := os.WriteFile(prog, []byte(code), 0o600); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(python, runner, prog, "2", "hello", "world").Output()
			if err != nil {
				t.Fatalf("runner: %v", err)
			}
			var eps []map[string]any
			if err := json.Unmarshal(out, &eps); err != nil || len(eps) != 2 {
				t.Fatalf("runner output %q: %v", out, err)
			}
			for _, e := range eps {
				if e["error"] != nil {
					t.Fatalf("episode failed unconfined: %v", e["error"])
				}
			}
			c.goal(t, dir, eps)
		})
	}
}
