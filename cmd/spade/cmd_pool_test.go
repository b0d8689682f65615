package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// fixedPoolPrograms copies four games programs of testdata/envs (with their hints) into a directory.
func fixedPoolPrograms(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{"logic_mastermind", "math_arithmetic_chain", "causal_switchboard", "logic_knights_knaves"} {
		for _, ext := range []string{".py", ".hint"} {
			body, err := os.ReadFile(repoFile(filepath.Join("testdata", "envs", name+ext)))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, name+ext), body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// The programs of these tests are testdata/envs's, in spade's older form, so they are imported with
// --shape lenient (the default is the authors' form, TestPoolImportShape).
//
// `spade pool import` checks every program in the real sandbox: a mixed input keeps what passes and lists
// what does not; a bad file is a one-line error (and the usage line), exit 2, nothing committed; a pool of only failing programs
// commits nothing.
func TestPoolImport(t *testing.T) {
	env := append(localEnv(t), "SPADE_PYTHON=/usr/bin/python3")
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	good := fixedPoolPrograms(t)
	hostile := repoFile("testdata/hostile/background_thread.py")
	out := must(t, env, "pool", "import", "--name", "fixed", "--shape", "lenient", good, hostile)
	if !strings.Contains(out, "pool fixed: 4 imported, 1 rejected by the gate") || !strings.Contains(out, "rejected background_thread") {
		t.Fatalf("mixed import:\n%s", out)
	}
	lk, err := lake.Open(context.Background(), lakeDir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := lake.ReadRows[schemas.PoolRow](context.Background(), lk, lake.PoolKey("fixed"))
	if err != nil || len(rows) != 4 {
		t.Fatalf("pool rows %d: %v", len(rows), err)
	}
	for _, r := range rows {
		if r.ClassName == "" || r.Hint == "" || r.Setting != schemas.SettingGames {
			t.Fatalf("row %+v", r)
		}
	}
	// A JSONL input with ids, hints and skills; duplicates by id are skipped.
	jsonl := filepath.Join(t.TempDir(), "more.jsonl")
	code, _ := os.ReadFile(repoFile("testdata/envs/optimize_knapsack.py"))
	line := `{"id": "knapsack", "skill": "optimization", "hint": "value per weight", "code": ` + jsonString(string(code)) + "}\n"
	if err := os.WriteFile(jsonl, []byte(line+line), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := must(t, env, "pool", "import", "--name", "fixed", "--shape", "lenient", jsonl); !strings.Contains(out, "1 imported, 0 rejected by the gate, 1 skipped as duplicates, 5 programs in total") {
		t.Fatalf("jsonl import: %s", out)
	}
	// Bad files: one line, exit 2, nothing committed.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id": "x", "text": "no code"}`+"\n"), 0o644)
	for _, args := range [][]string{{good, bad}, {filepath.Join(good, "absent.py")}, {repoFile("testdata/corpus/corpus.jsonl")}, {}} {
		r := spade(t, env, "", append([]string{"pool", "import", "--name", "other", "--shape", "lenient"}, args...)...)
		if r.code != 2 || !isUsageError(r.stderr) || !strings.Contains(r.stderr, "nothing was imported") {
			t.Errorf("%v: exit %d, stderr %q", args, r.code, r.stderr)
		}
	}
	r := spade(t, env, "", "pool", "import", "--name", "other", "--shape", "lenient", hostile)
	if r.code != 2 || !strings.Contains(r.stderr, "no program passed") {
		t.Errorf("only failing programs: exit %d, %q", r.code, r.stderr)
	}
	if _, err := lk.Manifest(context.Background(), lake.PoolKey("other")); err == nil {
		t.Error("a refused import committed pool other")
	}
}

func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// Fixed-environment GRPO end to end: `spade run` on an imported pool writes each pool's envs from it,
// generates nothing, never calls the Designer and trains the Agent only.
func TestFixedPoolRun(t *testing.T) {
	srv := startLoopServer(t)
	env := append(localEnv(t), "SPADE_PYTHON=/usr/bin/python3")
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	must(t, env, "pool", "import", "--name", "fixed", "--shape", "lenient", fixedPoolPrograms(t))
	args := append([]string{"--run", "f", "init"}, loopSettings(srv.URL, srv.URL)...)
	must(t, env, append(args, "--set", "sample.pool=fixed", "--set", "sample.refresh_every=2")...)
	out := must(t, env, "--run", "f", "run", "--steps", "0-3")
	if !strings.Contains(out, "pool") {
		t.Errorf("the time table has no pool stage:\n%s", out)
	}
	ctx := context.Background()
	lk, err := lake.Open(ctx, lakeDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{"samples", "candidates", "gate_results"} {
		if steps, _ := lk.Steps(ctx, "f", table); len(steps) != 0 {
			t.Errorf("%s written at %v in a fixed-pool run", table, steps)
		}
	}
	codes := map[string]bool{}
	for _, step := range []int64{0, 2} {
		envs, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: "f", Table: "envs", Step: step})
		if err != nil || len(envs) != 3 {
			t.Fatalf("envs at %d: %d, %v", step, len(envs), err)
		}
		for _, e := range envs {
			codes[e.CodeSHA256] = true
		}
	}
	if len(codes) != 4 {
		t.Errorf("two pools of 3 from 4 programs use %d distinct programs, want all 4", len(codes))
	}
	calls, err := lake.ReadTable[schemas.LLMCallRow](ctx, lk, "f", "llm_calls")
	if err != nil || len(calls) == 0 {
		t.Fatalf("llm_calls: %d, %v", len(calls), err)
	}
	for _, c := range calls {
		if c.Role != schemas.RoleAgent {
			t.Fatalf("a %s call in a fixed-pool run", c.Role)
		}
	}
	batches, err := lake.ReadTable[schemas.GRPOBatchRow](ctx, lk, "f", "grpo_batches")
	if err != nil || len(batches) == 0 {
		t.Fatalf("grpo_batches: %d, %v", len(batches), err)
	}
	for _, b := range batches {
		if b.Role != schemas.RoleAgent {
			t.Fatalf("a %s sample in a fixed-pool run", b.Role)
		}
	}
	if steps, _ := lk.Steps(ctx, "f", "train_metrics"); len(steps) != 4 {
		t.Errorf("train_metrics at %v, want 0-3", steps)
	}
	r := spade(t, env, "", "--run", "f", "generate", "--step", "0")
	if r.code != 2 || !strings.Contains(r.stderr, "sample.pool") {
		t.Errorf("generate in a fixed-pool run: exit %d, %q", r.code, r.stderr)
	}
}

// `spade pool import --checks`: official (the default, the authors' gate) accepts a program whose reset
// is not reproducible from its seed; strict rejects it at its reset check; any other value is exit 2.
func TestPoolImportCheckSets(t *testing.T) {
	env := append(localEnv(t), "SPADE_PYTHON=/usr/bin/python3")
	dir := t.TempDir()
	drifting := `import random

class Drifting:
    def reset(self, seed):
        self.target = random.randint(1, 10**9)
        return "Round %d: guess the number, one integer per turn." % self.target

    def step(self, action):
        try:
            guess = int(action.strip())
        except ValueError:
            return "Not a number.", 0.0, False, {}
        return ("Correct!", 1.0, True, {"success": True}) if guess == self.target else ("Wrong.", 0.0, False, {})
`
	if err := os.WriteFile(filepath.Join(dir, "drifting.py"), []byte(drifting), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := must(t, env, "pool", "import", "--name", "official", "--shape", "lenient", dir); !strings.Contains(out, "pool official: 1 imported, 0 rejected") {
		t.Fatalf("default (official) import:\n%s", out)
	}
	r := spade(t, env, "", "pool", "import", "--name", "strict", "--checks", "strict", dir)
	if r.code != 2 || !strings.Contains(r.stdout, "rejected drifting") || !strings.Contains(r.stdout, "reset") ||
		!strings.Contains(r.stderr, "no program passed") {
		t.Fatalf("strict import: exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	// The games programs of testdata pass both sets.
	if out := must(t, env, "pool", "import", "--name", "strict", "--checks", "strict", fixedPoolPrograms(t)); !strings.Contains(out, "4 imported, 0 rejected") {
		t.Fatalf("strict import of testdata programs:\n%s", out)
	}
	r = spade(t, env, "", "pool", "import", "--name", "x", "--checks", "lenient", dir)
	if r.code != 2 || !strings.Contains(r.stderr, "--checks must be official or strict") {
		t.Fatalf("--checks lenient: exit %d, %q", r.code, r.stderr)
	}
}

// `spade pool import` ends with the refused programs counted by reason, most frequent first: two programs
// that import subprocess and one that imports socket, beside one the gate accepts.
func TestPoolImportCountsRefusals(t *testing.T) {
	env := append(localEnv(t), "SPADE_PYTHON=/usr/bin/python3")
	dir := t.TempDir()
	games := repoFile("testdata/envs-authors/games")
	copyAs := func(from, to string, edit func(string) string) {
		body, err := os.ReadFile(filepath.Join(games, from))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, to), []byte(edit(string(body))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	same := func(s string) string { return s }
	copyAs("edge_reward_env.py", "edge_reward_env.py", same)
	copyAs("shell_clock_env.py", "shell_clock_env.py", same)
	copyAs("shell_clock_env.py", "shell_month_env.py", func(s string) string { return strings.ReplaceAll(s, "+%Y", "+%m") })
	copyAs("phone_home_env.py", "phone_home_env.py", same)
	out := must(t, env, "pool", "import", "--name", "authors", "--shape", "authors", dir)
	want := "refused 3: 2 import of subprocess is not allowed, 1 import of socket is not allowed\n"
	if !strings.Contains(out, want) || !strings.Contains(out, "pool authors: 1 imported, 3 rejected by the gate") {
		t.Fatalf("import output lacks %q:\n%s", want, out)
	}
}
