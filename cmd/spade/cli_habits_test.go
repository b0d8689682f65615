package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/testenv"
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
		{[]string{"--run", "s", "synth", "--steps", "24"}, `synth: --steps "24": a synthetic run is written from step 0 without gaps, so name 0-B (--steps 0-23 writes 24 steps)`},
		{[]string{"--run", "s", "synth", "--steps", "3x"}, `"3x" is not a step`},
		{[]string{"--run", "r", "rollout", "--step", "x"}, `rollout: invalid value "x" for --step`},
		{[]string{"query", "--bogus"}, "query: unknown flag --bogus"},
		{[]string{"query", "select 1", "--bogus"}, "query: unknown flag --bogus"},
		{[]string{"lake", "ls", "--sumary"}, "lake ls: unknown flag --sumary (did you mean --summary?)"},
		{[]string{"lake", "ls", "--lak", "x"}, "lake ls: unknown flag --lak (did you mean --lake?)"},
		{[]string{"query", "--format"}, "query: --format needs a value"},
		{[]string{"--bogus"}, "unknown flag --bogus"},
		{[]string{"--log-format", "yaml", "lake", "ls"}, "--log-format"},
		{[]string{"quer"}, `did you mean "query"`},
		{[]string{"rollot"}, `did you mean "rollout"`},
		{[]string{"help", "quer"}, `did you mean "query"`},
		{[]string{"corpus", "imprt"}, `did you mean "import"`},
		{[]string{"help", "corpus", "bogus"}, `corpus: unknown command "bogus"`},
		{[]string{"completion", "tcsh"}, "want bash, zsh or fish"},
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
	// Every command and subcommand: --help or -h anywhere after it prints `spade help PATH`, exit 0.
	for _, c := range []struct {
		path []string
		args []string
	}{
		{[]string{"query"}, []string{"query", "--help"}},
		{[]string{"query"}, []string{"query", "-h"}},
		{[]string{"query"}, []string{"--run", "demo", "query", "select 1", "--format", "csv", "--help"}},
		{[]string{"lake"}, []string{"lake", "--help"}},
		{[]string{"lake", "ls"}, []string{"lake", "ls", "--help"}},
		{[]string{"lake", "ls"}, []string{"lake", "ls", "--run", "nope", "-h"}},
		{[]string{"corpus", "import"}, []string{"corpus", "import", "f.jsonl", "--help"}},
		{[]string{"run"}, []string{"--lake", noLake, "run", "--help"}},
		{[]string{"env", "play"}, []string{"env", "play", "--help"}},
	} {
		want := spade(t, nil, "", append([]string{"help"}, c.path...)...)
		r := spade(t, nil, "", c.args...)
		if r.code != 0 || r.stdout != want.stdout || r.stderr != "" || !strings.Contains(r.stdout, "spade "+strings.Join(c.path, " ")+" - ") {
			t.Errorf("spade %s: exit %d, stderr %q; want exit 0 and the help of `spade help %s`:\n%.300s", strings.Join(c.args, " "), r.code, r.stderr, strings.Join(c.path, " "), r.stdout)
		}
	}
	if _, err := os.Stat(noLake); err == nil {
		t.Error("spade --lake DIR run --help created the lake directory")
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

// TestCompletion: spade __complete offers commands, subcommands, a command's flags with the global ones,
// preset names, the lake's runs and --log-format's values, and nothing for a file argument; the bash, zsh
// and fish scripts each pass the words through and offer what spade prints.
func TestCompletion(t *testing.T) {
	env := localEnv(t)
	must(t, env, "init", "--run", "demo", "--preset", "qwen3-4b-games")
	must(t, env, "init", "--run", "baseline", "--preset", "qwen3-4b-games")
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	words := func(args ...string) []string {
		return strings.Fields(must(t, env, append([]string{"__complete"}, args...)...))
	}
	for _, c := range []struct {
		args []string
		want []string
		not  []string
	}{
		{[]string{""}, []string{"query", "run", "rollout", "lake", "completion"}, []string{"__complete"}},
		{[]string{"que"}, []string{"query"}, []string{"run"}},
		{[]string{"lake", ""}, []string{"ls", "verify", "export", "vacuum", "upgrade"}, []string{"query"}},
		{[]string{"run", "--st"}, []string{"--steps"}, []string{"--lake"}},
		{[]string{"query", "--"}, []string{"--format", "--out", "--lake", "--run", "--log-format", "--help"}, []string{"--steps"}},
		{[]string{"lake", "ls", "--s"}, []string{"--summary"}, nil},
		{[]string{"init", "--preset", "qwen3-8b-"}, []string{"qwen3-8b-games", "qwen3-8b-tools", "qwen3-8b-fixed-gpt55"}, []string{"qwen3-4b-games"}},
		{[]string{"--run", ""}, []string{"baseline", "demo"}, nil},
		{[]string{"lake", "ls", "--run", "d"}, []string{"demo"}, []string{"baseline"}},
		{[]string{"--lake", lakeDir, "init", "--from", ""}, []string{"baseline", "demo"}, nil},
		{[]string{"--log-format", ""}, []string{"auto", "text", "json"}, nil},
		{[]string{"init", "--preset=qwen3-8b-"}, []string{"--preset=qwen3-8b-games", "--preset=qwen3-8b-tools"}, []string{"--preset=qwen3-4b-games"}},
		{[]string{"lake", "ls", "--run=d"}, []string{"--run=demo"}, []string{"--run=baseline"}},
		{[]string{"--log-format=j"}, []string{"--log-format=json"}, []string{"--log-format=text"}},
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}, nil},
		{[]string{"help", "lak"}, []string{"lake"}, nil},
	} {
		got := words(c.args...)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("__complete %q: %q lacks %s", c.args, got, w)
			}
		}
		for _, w := range c.not {
			if slices.Contains(got, w) {
				t.Errorf("__complete %q: %q offers %s", c.args, got, w)
			}
		}
	}
	if got := words("query", "-f", ""); len(got) != 0 {
		t.Errorf("__complete of query -f's file offers %q, want nothing (the shell offers files)", got)
	}
	noLake := append([]string{"SPADE_LAKE=" + filepath.Join(t.TempDir(), "none")}, env[1:]...)
	if got := must(t, noLake, "__complete", "--run", ""); got != "" {
		t.Errorf("__complete --run on a path without a lake: %q", got)
	}

	// Through each shell: the script's function, given the words typed, offers spade's candidates.
	shellEnv := append(os.Environ(), append(env, "PATH="+filepath.Dir(spadeBin)+":"+os.Getenv("PATH"))...)
	bashLike := `COMP_WORDS=(spade init --preset qwen3-8b-g); COMP_CWORD=3; _spade_complete; printf '%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(spade --run ''); COMP_CWORD=2; _spade_complete; printf '%s\n' "${COMPREPLY[@]}"
COMP_WORDS=(spade init --preset = qwen3-8b-g); COMP_CWORD=4; _spade_complete; printf '%s\n' "${COMPREPLY[@]}"`
	for _, sh := range []struct{ shell, run string }{
		{"bash", bashLike},
		// zsh runs a bash completion function under sh emulation (bashcompinit).
		{"zsh", "f() { emulate -L sh; " + strings.ReplaceAll(bashLike, "\n", "\n") + "; }; f"},
		{"fish", "complete -C'spade init --preset qwen3-8b-g'; complete -C'spade --run '; complete -C'spade init --preset=qwen3-8b-g' | string replace -- --preset= ''"},
	} {
		t.Run(sh.shell, func(t *testing.T) {
			path, err := exec.LookPath(sh.shell)
			testenv.Require(t, err == nil, "%s is needed to check its completion script: %v", sh.shell, err)
			script := must(t, env, "completion", sh.shell)
			if sh.shell == "bash" {
				if out, err := exec.Command("bash", "-n", "-c", script).CombinedOutput(); err != nil {
					t.Fatalf("bash -n: %v\n%s", err, out)
				}
			}
			f := filepath.Join(t.TempDir(), "completion")
			if err := os.WriteFile(f, []byte(script), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(path, "-c", "source "+f+"\n"+sh.run)
			cmd.Env = shellEnv
			out, err := cmd.CombinedOutput()
			if got := strings.Fields(string(out)); err != nil || !slices.Equal(got, []string{"qwen3-8b-games", "baseline", "demo", "qwen3-8b-games"}) {
				t.Errorf("%s completion: %v, got %q; want qwen3-8b-games, then the runs baseline and demo, then qwen3-8b-games after --preset=", sh.shell, err, out)
			}
		})
	}
	if r := spade(t, env, "", "completion", "tcsh"); r.code != 2 || !strings.Contains(r.stderr, "want bash, zsh or fish") {
		t.Errorf("completion tcsh: exit %d, %q", r.code, r.stderr)
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

// TestReplayPastItsEnd: replaying a step the recording does not cover stops with one line naming the
// steps it covers and what a real endpoint needs, not one line of request JSON per call; the steps it
// covers stay committed.
func TestReplayPastItsEnd(t *testing.T) {
	env := []string{"SPADE_LAKE=" + filepath.Join(t.TempDir(), "lake"), "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN=demo"}
	root, err := filepath.Abs(repoFile("."))
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"corpus", "import", "--name", "default", "testdata/corpus/corpus.jsonl"},
		{"init", "--preset", "qwen3-4b-games", "--config", "testdata/sample-run/replay.json"},
	} {
		if r := spadeIn(t, root, env, args...); r.code != 0 {
			t.Fatalf("spade %s: exit %d\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	r := spadeIn(t, root, env, "--log-format", "json", "run", "--steps", "0-5")
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
		if !strings.HasPrefix(l, "{") { // the JSON log lines of the stages
			lines = append(lines, l)
		}
	}
	want := "spade: step 4 is outside the recording: replay sample@" + filepath.Join(root, "testdata", "sample-run") +
		" covers steps 0-3; other steps need a real endpoint, a run whose llm.designer.base_url and llm.agent.base_url name a server" +
		" (spade --run NEW init --from RUN@3 --set llm.designer.base_url=URL --set llm.agent.base_url=URL continues one)"
	if r.code != 1 || len(lines) != 1 || lines[0] != want || strings.Contains(r.stderr, `"messages"`) {
		t.Fatalf("run --steps 0-5 past a recording of steps 0-3: exit %d, stderr lines %q; want exit 1 and the one line\n%s", r.code, lines, want)
	}
	if got := spadeIn(t, root, env, "query", "--format", "csv", "select max(step) as s from episodes"); got.stdout != "s\n3\n" {
		t.Errorf("the covered steps: %q %s", got.stdout, got.stderr)
	}
}

// TestMetricsSQLFromAnyDirectory: `metrics --sql MODEL` prints a script (the run's parameters and the
// embedded model) that spade query runs from a directory without sql/, with the model's own result.
func TestMetricsSQLFromAnyDirectory(t *testing.T) {
	env := append(localEnv(t), "SPADE_RUN=s")
	must(t, env, "synth", "--steps", "0-7")
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

// TestReadOnlyCommandsCreateNoLake: every command that only reads a lake, given a path that holds none
// (a directory that does not exist, an empty one, one holding other files), exits 2 with the line naming
// the path and the command that creates a lake there, and creates nothing: no directory, no file.
func TestReadOnlyCommandsCreateNoLake(t *testing.T) {
	commands := map[string][]string{
		"query":       {"--run", "demo", "query", "select 1"},
		"metrics":     {"--run", "demo", "metrics"},
		"report":      {"--run", "demo", "report", "--out", filepath.Join(t.TempDir(), "r.html")},
		"view":        {"view", "--addr", "127.0.0.1:0"},
		"env play":    {"--run", "demo", "env", "play", "e"},
		"lake ls":     {"lake", "ls"},
		"lake verify": {"lake", "verify"},
		"lake export": {"lake", "export", filepath.Join(t.TempDir(), "exported")},
		"config show": {"--run", "demo", "config", "show"},
		"gate":        {"--run", "demo", "gate", "--step", "0"},
		"ablate":      {"--run", "a", "--run", "b", "ablate"},
	}
	for name, args := range commands {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			missing, empty, other := filepath.Join(root, "typo"), filepath.Join(root, "empty"), filepath.Join(root, "other")
			for _, dir := range []string{empty, other} {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(other, "notes.txt"), []byte("not a lake"), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, dir := range []string{missing, empty, other} {
				r := spade(t, []string{"SPADE_LAKE=" + dir, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN="}, "", args...)
				want := fmt.Sprintf("no lake at %s: create one with `spade --lake %s init --run NAME`", dir, dir)
				if msg, ok := usageMessage(r.stderr); r.code != 2 || !ok || !strings.HasPrefix(msg, "spade: "+want) {
					t.Errorf("spade %s on %s: exit %d, stderr %q; want exit 2 and %q", strings.Join(args, " "), filepath.Base(dir), r.code, r.stderr, want)
				}
			}
			if _, err := os.Stat(missing); err == nil {
				t.Errorf("spade %s created %s", strings.Join(args, " "), missing)
			}
			for dir, want := range map[string]int{empty: 0, other: 1} {
				if entries, _ := os.ReadDir(dir); len(entries) != want {
					t.Errorf("spade %s wrote into %s: %d entries, want %d", strings.Join(args, " "), filepath.Base(dir), len(entries), want)
				}
			}
		})
	}
}

// TestMissingRunNamesTheRuns: a run the lake does not have is refused (exit 2) with the closest name
// and the runs the lake has, by every command that opens a run, and the command it suggests creates the
// run when run by a shell as written, with the lake named by SPADE_LAKE and with the default ./lake.
func TestMissingRunNamesTheRuns(t *testing.T) {
	env := localEnv(t)
	must(t, env, "init", "--run", "demo", "--preset", "qwen3-4b-games")
	must(t, env, "init", "--run", "baseline", "--preset", "qwen3-4b-games")
	var suggested string
	for _, args := range [][]string{
		{"--run", "dem", "query", "select 1"},
		{"--run", "dem", "metrics"},
		{"lake", "ls", "--run", "dem"},
		{"--run", "dem", "config", "show"},
		{"--run", "dem", "gate", "--step", "0"},
		{"--run", "dem", "env", "play", "e"},
	} {
		r := spade(t, env, "", args...)
		msg, ok := usageMessage(r.stderr)
		if r.code != 2 || !ok || !strings.Contains(msg, `no run "dem" in `) || !strings.Contains(msg, `(did you mean "demo"?)`) ||
			!strings.Contains(msg, "; the lake has: baseline, demo. Create it with `spade --lake ") {
			t.Errorf("spade %s: exit %d, stderr %q; want exit 2, did you mean \"demo\", the runs and the init command", strings.Join(args, " "), r.code, r.stderr)
		}
		_, cmd, _ := strings.Cut(msg, "`")
		suggested, _, _ = strings.Cut(cmd, "`")
	}
	shell := func(dir string, env []string, line string) {
		t.Helper()
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), append(env, "PATH="+filepath.Dir(spadeBin)+":"+os.Getenv("PATH"))...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the suggested %q: %v\n%s", line, err, out)
		}
	}
	shell(t.TempDir(), []string{"SPADE_LAKE=", "SPADE_RUN="}, suggested)
	must(t, env, "--run", "dem", "metrics")
	// A name close to none gets the list without a guess; "d" is taken for the run it begins.
	r := spade(t, env, "", "--run", "zzzzzzzz", "metrics")
	if msg, _ := usageMessage(r.stderr); r.code != 2 || strings.Contains(msg, "did you mean") || !strings.Contains(msg, "the lake has: baseline, dem, demo.") {
		t.Errorf("metrics of a run close to none: exit %d, %q", r.code, r.stderr)
	}
	if r := spade(t, env, "", "--run", "b", "metrics"); !strings.Contains(r.stderr, `(did you mean "baseline"?)`) {
		t.Errorf("metrics --run b: %q", r.stderr)
	}
	// With the default lake (./lake, no SPADE_LAKE), the suggestion names no --lake and works there.
	dir := t.TempDir()
	cwdEnv := []string{"SPADE_LAKE=", "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN="}
	cmd := exec.Command(spadeBin, "init", "--run", "one")
	cmd.Dir, cmd.Env = dir, append(os.Environ(), cwdEnv...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("init in %s: %v\n%s", dir, err, out)
	}
	r = spadeIn(t, dir, cwdEnv, "--run", "two", "metrics")
	msg, _ := usageMessage(r.stderr)
	if r.code != 2 || !strings.HasSuffix(msg, "Create it with `spade init --run two`.") {
		t.Fatalf("metrics of a missing run in the default lake: exit %d, %q", r.code, r.stderr)
	}
	shell(dir, cwdEnv, "spade init --run two")
	if r := spadeIn(t, dir, cwdEnv, "--run", "two", "metrics"); r.code != 0 {
		t.Errorf("metrics after the suggested init: exit %d, %q", r.code, r.stderr)
	}
	// A lake of many runs names the first 20 and the command that lists them all.
	for i := range 20 {
		if r := spadeIn(t, dir, cwdEnv, "init", "--run", fmt.Sprintf("x%02d", i)); r.code != 0 {
			t.Fatal(r.stderr)
		}
	}
	r = spadeIn(t, dir, cwdEnv, "--run", "nope", "metrics")
	if msg, _ := usageMessage(r.stderr); !strings.Contains(msg, "; the lake has 22 runs: one, two, x00, ") || !strings.Contains(msg, ", x17 and 2 more (`spade lake ls --summary` lists them).") {
		t.Errorf("metrics of a missing run in a lake of 22 runs: %q", r.stderr)
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

// TestPythonChoice: with no SPADE_PYTHON, a first python3 on PATH that lacks numpy gives way to Debian's,
// and spade says which it took; SPADE_PYTHON still decides when set.
func TestPythonChoice(t *testing.T) {
	testenv.Require(t, exec.Command("/usr/bin/python3", "-c", "import numpy").Run() == nil, "/usr/bin/python3 needs numpy (python3-numpy)")
	bare := t.TempDir()
	if err := os.WriteFile(filepath.Join(bare, "python3"), []byte("#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	path := "PATH=" + bare + ":" + os.Getenv("PATH")
	r := spade(t, []string{path, "SPADE_PYTHON="}, "", "doctor")
	note := "python: " + filepath.Join(bare, "python3") + " (the first python3 on PATH) lacks numpy: using /usr/bin/python3, which has them (set SPADE_PYTHON to choose another)"
	if !strings.Contains(r.stdout, "python:    /usr/bin/python3 -> ") || !strings.Contains(r.stderr, note) {
		t.Errorf("doctor with a bare python3 first on PATH: exit %d\n%s\n%s\nwant /usr/bin/python3 and the note %q", r.code, r.stdout, r.stderr, note)
	}
	r = spade(t, []string{path, "SPADE_PYTHON=" + filepath.Join(bare, "python3")}, "", "doctor")
	if !strings.Contains(r.stdout, "python:    "+filepath.Join(bare, "python3")+" -> ") || strings.Contains(r.stderr, "lacks numpy: using") {
		t.Errorf("doctor with SPADE_PYTHON set: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}
