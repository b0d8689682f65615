package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// runDemo runs scripts/demo.sh (what `make demo` runs) from the repository root with this package's
// spade binary on a fresh lake.
func runDemo(t *testing.T, env ...string) string {
	t.Helper()
	return runDemoIn(t, filepath.Join(t.TempDir(), "lake"), env...)
}

// runDemoIn is runDemo on the lake directory lakeDir.
func runDemoIn(t *testing.T, lakeDir string, env ...string) string {
	t.Helper()
	script, err := filepath.Abs(repoFile("scripts/demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, lakeDir, "demo")
	cmd.Dir = repoFile(".")
	cmd.Env = append(append(os.Environ(), "SPADE="+spadeBin, "SPADE_CACHE="+t.TempDir()), env...)
	if os.Getenv("SPADE_PYTHON") == "" {
		cmd.Env = append(cmd.Env, "SPADE_PYTHON=/usr/bin/python3")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	return string(out)
}

// TestDemoReplaysTheSampleRun: the demo replays testdata/sample-run through every stage (real sandbox)
// and prints the summary.
func TestDemoReplaysTheSampleRun(t *testing.T) {
	lakeDir := filepath.Join(t.TempDir(), "lake")
	out := runDemoIn(t, lakeDir)
	for _, want := range []string{"run sample, steps 0-3", "steps run: 4, already complete: 0", "accepted envs per skill",
		"regenerated", "solve_rate_hint", "mean_regret", "band_share", "memory after the last pool end", "designer"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// One line per step with what it did, the numbers of the lake (no Go map syntax).
	stepLine := regexp.MustCompile(`(?m)^step [0-3] \(pool [02]\): \d+ envs accepted · solve rate ([\d.]+%|—) unhinted / ([\d.]+%|—) hinted · regret ([-+][\d.]+ over \d+ envs|—) · loss \S.* · tokens \S+ agent / \S+ designer · [\d.]+s$`)
	if n := len(stepLine.FindAllString(out, -1)); n != 4 || strings.Contains(out, "map[") {
		t.Errorf("demo output: %d step lines, want 4 and no map syntax:\n%s", n, out)
	}

	// The closing lines are commands that work as written: the report and the query run through a shell
	// (the viewer is a server: its line names the lake and the address it listens on).
	_, next, ok := strings.Cut(out, "== next: what the run made, in the viewer, a report or your own SQL ==\n")
	lines := strings.Split(strings.TrimSpace(next), "\n")
	if !ok || len(lines) != 3 || !strings.HasPrefix(lines[0], spadeBin+" --lake "+lakeDir+" view ") || !strings.Contains(lines[0], "http://127.0.0.1:8600") {
		t.Fatalf("the demo's closing lines:\n%s", next)
	}
	dir := t.TempDir()
	for _, line := range lines[1:] {
		cmd := exec.Command("sh", "-c", line)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "SPADE_CACHE="+t.TempDir(), "SPADE_LAKE=", "SPADE_RUN=")
		if got, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("the demo's line %q: %v\n%s", line, err, got)
		} else if strings.Contains(line, " query ") && !strings.Contains(string(got), "solved") {
			t.Errorf("the demo's query printed:\n%s", got)
		}
	}
	if st, err := os.Stat(filepath.Join(dir, "report.html")); err != nil || st.Size() < 10000 {
		t.Errorf("the demo's report line wrote no report: %v", err)
	}

	// Two runs of the demo lake: a child of the replayed run with one setting changed differs from it in
	// that key and in its parent, and nothing else.
	env := []string{"SPADE_LAKE=" + lakeDir, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN="}
	must(t, env, "--run", "demo2", "init", "--from", "demo@1", "--set", "regret.band_lo=0.3")
	diff := must(t, env, "config", "diff", "demo", "demo2")
	lines = strings.Split(strings.TrimSpace(diff), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "parent ") || !strings.HasSuffix(lines[1], " demo@1") ||
		strings.Join(strings.Fields(lines[2]), " ") != "regret.band_lo 0.4 0.3" {
		t.Errorf("config diff demo demo2:\n%s\nwant parent (\"\" vs demo@1) and regret.band_lo 0.4 -> 0.3", diff)
	}
}

// TestDemoWithoutARecording: with no recording the demo still runs (corpus and the first pool's slots).
func TestDemoWithoutARecording(t *testing.T) {
	out := runDemo(t, "SAMPLE_RUN="+t.TempDir())
	for _, want := range []string{"corpus by domain", "first pool's slots", "no recording", "== next: the slots in your own SQL =="} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
