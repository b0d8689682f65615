package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/testenv"
	"github.com/spadekit/spade/schemas"
)

// sandboxEnv pins the interpreter the CLI's sandbox uses in tests.
func sandboxEnv(t *testing.T) []string {
	env := localEnv(t)
	if os.Getenv("SPADE_PYTHON") == "" {
		if _, err := os.Stat("/usr/bin/python3"); err == nil {
			env = append(env, "SPADE_PYTHON=/usr/bin/python3")
		}
	}
	return env
}

func TestDoctor(t *testing.T) {
	out := must(t, sandboxEnv(t), "doctor")
	for _, want := range []string{"python:", "bwrap", "namespaces", "landlock", "in force:  bwrap", "preloaded: math", "optional:"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
}

func TestEnvCheck(t *testing.T) {
	env := sandboxEnv(t)
	out := must(t, env, "env", "check", repoFile("testdata/envs/tools_inventory.py"))
	for _, want := range []string{"tools setting", "pass static", "pass hint_leak", "pass tools_schema", "skip tools_screen", "accepted: class Inventory, legacy contract ("} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), want) {
			t.Errorf("env check output lacks %q:\n%s", want, out)
		}
	}
	r := spade(t, env, "", "env", "check", repoFile("testdata/hostile/read_planted_file.py"))
	if r.code != 1 || !strings.Contains(r.stdout, "FAIL static") || !strings.Contains(r.stdout, "'open'") || !strings.Contains(r.stdout, "rejected") {
		t.Errorf("hostile program: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = spade(t, env, "", "env", "check", repoFile("testdata/hostile/loop_in_step.py"), "--no-static", "--hint", "x")
	if r.code != 1 || !strings.Contains(r.stdout, "skip static") || !strings.Contains(r.stdout, "timeout") {
		t.Errorf("loop in step without the static check: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := spade(t, env, "", "env", "check"); r.code != 2 {
		t.Errorf("no file: exit %d, want 2", r.code)
	}
	if r := spade(t, env, "", "env", "check", "--setting", "chess", repoFile("testdata/envs/logic_mastermind.py")); r.code != 2 {
		t.Errorf("bad setting: exit %d, want 2", r.code)
	}
}

func TestGateAndEnvPlay(t *testing.T) {
	env := sandboxEnv(t)
	must(t, env, "--run", "g1", "init", "--preset", "qwen3-4b-games", "--set", "generate.hint_mode=inline", "--set", "gate.shape=lenient")
	code, err := os.ReadFile(repoFile("testdata/envs/spatial_rotation.py"))
	if err != nil {
		t.Fatal(err)
	}
	hint, _ := os.ReadFile(repoFile("testdata/envs/spatial_rotation.hint"))
	ctx := context.Background()
	lk, err := lake.Open(ctx, strings.TrimPrefix(env[0], "SPADE_LAKE="))
	if err != nil {
		t.Fatal(err)
	}
	rows := []schemas.CandidateRow{
		{Slot: 0, EnvID: "rot-0", Attempt: 1, Skill: schemas.SkillSpatial, Setting: schemas.SettingGames, Code: string(code), Hint: string(hint)},
		{Slot: 1, EnvID: "bad-1", Attempt: 1, Skill: schemas.SkillLogic, Setting: schemas.SettingGames, Code: "import os\n", Hint: "h"},
	}
	if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "g1", Table: schemas.CandidatesSpec.Name, Step: 0}, rows, lake.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := must(t, env, "--run", "g1", "gate", "--step", "0", "--no-regenerate")
	if !strings.Contains(out, "1 of 2 slots accepted") {
		t.Fatalf("gate said %q", out)
	}
	if out := must(t, env, "--run", "g1", "gate", "--step", "0", "--no-regenerate"); !strings.Contains(out, "already committed") {
		t.Fatalf("second gate said %q", out)
	}
	r := spade(t, append(env, "SPADE_RUN=g1"), "garbage\n:reset\nxyz\n:quit\n", "env", "play", "rot-0", "--hint", "--seed", "3")
	if r.code != 0 {
		t.Fatalf("env play: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"class Rotation", "hint: A clockwise", "[seed 3]", "Transformation 1 of 3", "reward 0.000", "[seed 4]"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("env play output lacks %q:\n%s", want, r.stdout)
		}
	}
	if r := spade(t, append(env, "SPADE_RUN=g1"), "", "env", "play", "nope"); r.code != 2 {
		t.Errorf("unknown env: exit %d, want 2", r.code)
	}
}

// TestDoctorExplainsFailures: each failing layer gets a fix line a user can act on. Without bwrap on
// PATH it says to install bubblewrap and --strict exits 1 (plain doctor 0); an interpreter outside /usr
// that the sandbox cannot reach is named with the SPADE_PYTHON to use instead.
func TestDoctorExplainsFailures(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testenv.SkipUnlessCI(t, "needs Debian's /usr/bin/python3: %v", err)
	}
	noBwrap := append(localEnv(t), "PATH="+t.TempDir(), "SPADE_PYTHON=/usr/bin/python3")
	r := spade(t, noBwrap, "", "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "fix: install bubblewrap: apt-get install -y bubblewrap") {
		t.Errorf("doctor without bwrap: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = spade(t, noBwrap, "", "doctor", "--strict")
	if r.code != exitFailure || !strings.Contains(r.stderr, "not bwrap") {
		t.Errorf("doctor --strict without bwrap: exit %d, want 1\n%s", r.code, r.stderr)
	}
	// A copy of the interpreter in a directory only its owner can read, as a pyenv install in a home
	// directory is to the sandbox's uid 65534.
	dir := filepath.Join(t.TempDir(), "pyenv", "bin")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(dir), 0o700)
	real, err := filepath.EvalSymlinks("/usr/bin/python3")
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(real)
	if err != nil {
		t.Fatal(err)
	}
	py := filepath.Join(dir, "python3")
	if err := os.WriteFile(py, data, 0o700); err != nil {
		t.Fatal(err)
	}
	r = spade(t, append(localEnv(t), "SPADE_PYTHON="+py), "", "doctor")
	if !strings.Contains(r.stdout, "fix: ") || !strings.Contains(r.stdout, "SPADE_PYTHON=/usr/bin/python3") || !strings.Contains(r.stdout, py) {
		t.Errorf("doctor with %s: exit %d, no fix line naming it and SPADE_PYTHON=/usr/bin/python3:\n%s%s", py, r.code, r.stdout, r.stderr)
	}
}
