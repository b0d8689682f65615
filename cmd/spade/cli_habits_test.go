package main

import (
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// spadeIn runs the binary with args from directory dir.
func spadeIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(spadeBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.Output()
	code := 0
	stderr := ""
	if ee, ok := err.(*exec.ExitError); ok {
		code, stderr = ee.ExitCode(), string(ee.Stderr)
	} else if err != nil {
		t.Fatalf("spade %v: %v", args, err)
	}
	return result{code: code, stdout: string(out), stderr: stderr}
}

// TestUsageErrorsAreTwoLines: every usage error exits 2 with exactly two lines on stderr (what was wrong,
// then the command's usage line), never the whole help, and writes nothing to stdout.
func TestUsageErrorsAreTwoLines(t *testing.T) {
	env := localEnv(t)
	must(t, env, "--run", "r", "init", "--preset", "qwen3-4b-games")
	for _, tc := range []struct {
		args []string
		want string // in the first line
	}{
		{[]string{"--run", "r", "run"}, "--steps is required"},
		{[]string{"--run", "r", "run", "--steps", "3x"}, `"3x" is not a step`},
		{[]string{"--run", "r", "run", "--steps", "2..3"}, "0-3,8,10-11"},
		{[]string{"--run", "r", "run", "--steps", "1,,3"}, "empty item"},
		{[]string{"--run", "r", "run", "--steps", "5-2"}, "ends before it starts"},
		{[]string{"--run", "r", "run", "--steps", "0", "--only", "train"}, "unknown stage"},
		{[]string{"--run", "r", "gate"}, "--step is required"},
		{[]string{"--run", "r", "rollout", "--step", "x"}, "invalid value"},
		{[]string{"query", "--bogus"}, "flag provided but not defined"},
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"--log-format", "yaml", "lake", "ls"}, "--log-format"},
		{[]string{"quer"}, `did you mean "query"`},
		{[]string{"rollot"}, `did you mean "rollout"`},
		{[]string{"help", "quer"}, `did you mean "query"`},
		{[]string{"corpus", "imprt"}, `did you mean "import"`},
		{[]string{"help", "corpus", "bogus"}, `corpus: unknown command "bogus"`},
		{[]string{"completion", "fish"}, "want bash or zsh"},
		{[]string{"env", "play"}, "ENV_ID"},
	} {
		r := spade(t, env, "", tc.args...)
		lines := strings.Split(strings.TrimRight(r.stderr, "\n"), "\n")
		if r.code != exitUsage || len(lines) != 2 || !strings.Contains(lines[0], tc.want) || !strings.HasPrefix(lines[1], "usage: spade") || r.stdout != "" {
			t.Errorf("spade %s: exit %d, stdout %q, stderr:\n%s\nwant exit 2, two lines, the first containing %q, the second the usage line",
				strings.Join(tc.args, " "), r.code, r.stdout, r.stderr, tc.want)
		}
	}
	// The usage line names the command's required flags and arguments.
	r := spade(t, env, "", "--run", "r", "run")
	if !strings.Contains(r.stderr, "usage: spade [global options] run --steps STEPS [options]") {
		t.Errorf("run's usage line: %s", r.stderr)
	}
	r = spade(t, env, "", "corpus", "import")
	if !strings.Contains(r.stderr, "corpus import [options] FILE...") {
		t.Errorf("corpus import's usage line: %s", r.stderr)
	}
}

// TestHelpCommand: `spade help CMD` prints the command's help (as CMD --help does), for subcommands too.
func TestHelpCommand(t *testing.T) {
	for _, args := range [][]string{{"help", "query"}, {"help", "run"}, {"help", "corpus"}, {"help", "corpus", "import"}, {"help"}, {}} {
		r := spade(t, nil, "", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "NAME:") || r.stderr != "" {
			t.Errorf("spade %s: exit %d\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	if r := spade(t, nil, "", "help", "query"); !strings.Contains(r.stdout, "spade query - run DuckDB SQL") {
		t.Errorf("help query:\n%s", r.stdout)
	}
	if r := spade(t, nil, "", "help", "run"); !strings.Contains(r.stdout, "0-3,8,10-11") {
		t.Errorf("help run does not document the --steps grammar:\n%s", r.stdout)
	}
	if r := spade(t, nil, "", "help", "corpus"); !strings.Contains(r.stdout, "import") {
		t.Errorf("help corpus does not list import:\n%s", r.stdout)
	}
}

// TestHelpFlag: `spade --help`, `spade -h` and `spade --run R --help` print the app's help, as `spade
// help` does, and exit 0.
func TestHelpFlag(t *testing.T) {
	want := spade(t, nil, "", "help")
	noLake := filepath.Join(t.TempDir(), "nolake")
	for _, args := range [][]string{{"--help"}, {"-h"}, {"--run", "demo", "--help"}, {"--lake", noLake, "-h"}} {
		r := spade(t, nil, "", args...)
		if r.code != 0 || r.stdout != want.stdout || r.stderr != "" {
			t.Errorf("spade %s: exit %d, stderr %q; want exit 0 and the help of `spade help`:\n%s", strings.Join(args, " "), r.code, r.stderr, r.stdout)
		}
	}
	if _, err := os.Stat(noLake); err == nil {
		t.Error("spade --lake DIR -h created the lake directory")
	}
}

// TestVersion: --version names spade's version, the DuckDB and Arrow module versions and the commit.
func TestVersion(t *testing.T) {
	r := spade(t, nil, "", "--version")
	if r.code != 0 {
		t.Fatalf("--version: exit %d: %s", r.code, r.stderr)
	}
	for _, want := range []string{"spade ", "commit:", "github.com/duckdb/duckdb-go/v2 v2.", "github.com/apache/arrow-go/v18 v18.", "go:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--version lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestCompletion: the completion script is valid bash, and spade answers its completion requests with
// the commands and a command's flags.
func TestCompletion(t *testing.T) {
	script := must(t, nil, "completion", "bash")
	if out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}
	words := must(t, nil, "--generate-bash-completion")
	for _, want := range []string{"query", "run", "rollout", "help"} {
		if !strings.Contains(words, want+"\n") {
			t.Errorf("completion of commands lacks %s:\n%s", want, words)
		}
	}
	if words := must(t, nil, "run", "--st", "--generate-bash-completion"); !strings.Contains(words, "--steps") {
		t.Errorf("completion of run's flags lacks --steps:\n%s", words)
	}
	// Through bash itself: the function completes "spade que" to query.
	cmd := exec.Command("bash", "-c", script+`
COMP_WORDS=(spade que); COMP_CWORD=1; _spade_words; printf '%s\n' "${COMPREPLY[@]}"`)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(spadeBin)+":"+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "query" {
		t.Errorf("bash completion of 'spade que': %v %q", err, out)
	}
}

// TestReplayRunFromAnotherDirectory: a run created with a relative replay lake (the demo's
// replay:sample@testdata/sample-run) stores it absolute, so its stages replay from any directory.
func TestReplayRunFromAnotherDirectory(t *testing.T) {
	lakeDir := filepath.Join(t.TempDir(), "lake")
	env := []string{"SPADE_LAKE=" + lakeDir, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN=demo"}
	root, err := filepath.Abs(repoFile("."))
	if err != nil {
		t.Fatal(err)
	}
	if r := spadeIn(t, root, env, "init", "--preset", "qwen3-4b-games", "--config", "testdata/sample-run/replay.json"); r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	raw, err := os.ReadFile(filepath.Join(lakeDir, "runs", "demo", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		LLM struct {
			Designer struct {
				BaseURL string `json:"base_url"`
			} `json:"designer"`
		} `json:"llm"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	if want := "replay:sample@" + filepath.Join(root, "testdata", "sample-run"); cfg.LLM.Designer.BaseURL != want {
		t.Fatalf("run.json designer base_url %q, want %q", cfg.LLM.Designer.BaseURL, want)
	}
	elsewhere := t.TempDir()
	corpus := filepath.Join(root, "testdata", "corpus", "corpus.jsonl")
	for _, args := range [][]string{{"corpus", "import", "--name", "default", corpus}, {"sample", "--step", "0"}, {"generate", "--step", "0"}} {
		if r := spadeIn(t, elsewhere, env, args...); r.code != 0 {
			t.Fatalf("spade %s from %s: exit %d\n%s", strings.Join(args, " "), elsewhere, r.code, r.stderr)
		}
	}
}

// TestMetricsSQLFromAnyDirectory: `metrics --sql MODEL` prints a script (the run's parameters and the
// embedded model) that spade query runs from a directory without sql/, with the model's own result.
func TestMetricsSQLFromAnyDirectory(t *testing.T) {
	env := append(localEnv(t), "SPADE_RUN=s")
	must(t, env, "synth", "--steps", "8")
	dir := t.TempDir()
	script := spadeIn(t, dir, env, "metrics", "--sql", "regret_curve")
	if script.code != 0 || !strings.Contains(script.stdout, "set variable") {
		t.Fatalf("metrics --sql: exit %d\n%s%s", script.code, script.stdout, script.stderr)
	}
	got := spade(t, env, script.stdout, "query", "--format", "csv")
	want := must(t, env, "metrics", "--model", "regret_curve", "--format", "csv")
	if got.code != 0 || !sameCSV(got.stdout, want) {
		t.Errorf("the script's result differs from the model's:\n%s\nwant\n%s", got.stdout, want)
	}
}

// sameCSV compares two CSV texts cell by cell, numbers within 1e-9 (DuckDB may sum in another order).
func sameCSV(a, b string) bool {
	la, lb := strings.Split(strings.TrimSpace(a), "\n"), strings.Split(strings.TrimSpace(b), "\n")
	if len(la) != len(lb) {
		return false
	}
	for i := range la {
		ca, cb := strings.Split(la[i], ","), strings.Split(lb[i], ",")
		if len(ca) != len(cb) {
			return false
		}
		for j := range ca {
			x, errx := strconv.ParseFloat(ca[j], 64)
			y, erry := strconv.ParseFloat(cb[j], 64)
			if errx == nil && erry == nil {
				if math.Abs(x-y) > 1e-9 {
					return false
				}
			} else if ca[j] != cb[j] {
				return false
			}
		}
	}
	return true
}

// TestReadOnlyCommandsCreateNoLake: a command that only reads, given a lake path that does not exist (a
// typo), says so and exits 2 without creating anything there; a missing run's message gives the command
// that creates it in the form that works.
func TestReadOnlyCommandsCreateNoLake(t *testing.T) {
	typo := filepath.Join(t.TempDir(), "typo")
	env := []string{"SPADE_LAKE=" + typo, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN="}
	for _, args := range [][]string{
		{"--run", "demo", "query", "select 1"},
		{"--run", "demo", "metrics"},
		{"--run", "demo", "report", "--out", filepath.Join(t.TempDir(), "r.html")},
		{"--run", "demo", "env", "play", "e"},
		{"--run", "demo", "config", "show"},
		{"--run", "demo", "gate", "--step", "0"},
		{"view", "--addr", "127.0.0.1:0"},
		{"--run", "a", "--run", "b", "ablate"},
	} {
		r := spade(t, env, "", args...)
		if msg, ok := usageMessage(r.stderr); r.code != 2 || !ok || !strings.Contains(msg, "no lake at "+typo) {
			t.Errorf("spade %s: exit %d, stderr %q; want exit 2 and \"no lake at %s\"", strings.Join(args, " "), r.code, r.stderr, typo)
		}
		if _, err := os.Stat(typo); err == nil {
			t.Fatalf("spade %s created %s", strings.Join(args, " "), typo)
		}
	}
	env = localEnv(t)
	must(t, env, "--run", "a", "init", "--preset", "qwen3-4b-games")
	r := spade(t, env, "", "--run", "nope", "metrics")
	if r.code != 2 || !strings.Contains(r.stderr, "create it with `spade --run nope init`") {
		t.Errorf("metrics of a missing run: exit %d, %q; want exit 2 and the init command in the form that works", r.code, r.stderr)
	}
}

// TestFlagsAnywhere: a command's flags after its positional arguments, and global flags after the
// command, are read as flags (not dropped into the arguments); "--" still ends the flags.
func TestFlagsAnywhere(t *testing.T) {
	env := localEnv(t)
	must(t, env, "init", "--run", "a", "--preset", "qwen3-4b-games")
	must(t, env, "init", "--preset", "qwen3-8b-games", "--run", "b")
	out := filepath.Join(t.TempDir(), "o.csv")
	if r := must(t, env, "query", "select 1 as x", "--format", "csv", "--out", out, "--run", "a"); r != "" {
		t.Errorf("query with --out after the SQL printed %q, want nothing on stdout", r)
	}
	if got := readFile(t, out); got != "x\n1\n" {
		t.Errorf("query --format csv --out after the SQL wrote %q, want the CSV of the result", got)
	}
	if ls := must(t, env, "lake", "ls", "--run", "b"); !strings.Contains(ls, "b  ") || strings.Contains(ls, "a  ") {
		t.Errorf("lake ls --run b:\n%s", ls)
	}
	// The subcommand's own --run takes the flag; the global one after the command is the same run.
	if show := must(t, env, "config", "show", "--format", "json", "--run", "b"); !strings.Contains(show, `"preset": "qwen3-8b-games"`) {
		t.Errorf("config show --format json --run b:\n%.300s", show)
	}
	if got := must(t, env, "--run", "a", "query", "--format", "csv", "--", "select -1 as y"); got != "y\n-1\n" {
		t.Errorf("query -- SQL: %q", got)
	}
	r := spade(t, env, "", "--run", "a", "query", "select 1", "--bogus")
	if msg, ok := usageMessage(r.stderr); r.code != 2 || !ok || !strings.Contains(msg, "bogus") {
		t.Errorf("an unknown flag after the SQL: exit %d, %q; want exit 2 naming it", r.code, r.stderr)
	}
	if h := must(t, env, "query", "select 1", "--help"); !strings.Contains(h, "spade query - run DuckDB SQL") {
		t.Errorf("query SQL --help shows:\n%.300s", h)
	}
}
