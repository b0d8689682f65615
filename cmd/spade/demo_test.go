package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDemoReplaysARecording runs scripts/demo.sh (what `make demo` runs) on a run recorded against the
// scripted model: the script copies the recording into a fresh lake, replays it through every stage and
// prints the summary.
func TestDemoReplaysARecording(t *testing.T) {
	srv := startLoopServer(t)
	recording := t.TempDir()
	t.Setenv("SPADE_CACHE", t.TempDir())
	if os.Getenv("SPADE_PYTHON") == "" {
		t.Setenv("SPADE_PYTHON", "/usr/bin/python3")
	}
	for _, args := range [][]string{
		{"--lake", recording, "corpus", "import", "--name", "testdata", repoFile("testdata/corpus/corpus.jsonl")},
		append([]string{"--lake", recording, "--run", "recorded", "init"}, loopSettings(srv.URL, srv.URL)...),
		{"--lake", recording, "--run", "recorded", "run", "--steps", "0-3"},
	} {
		if out, err := exec.Command(spadeBin, args...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	// The recording holds only its run, as testdata/sample-run does.
	if err := os.RemoveAll(filepath.Join(recording, "corpora")); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(repoFile("scripts/demo.sh"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", script, filepath.Join(t.TempDir(), "lake"), "demo")
	cmd.Dir = repoFile(".")
	cmd.Env = append(os.Environ(), "SPADE="+spadeBin, "SAMPLE_RUN="+recording)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"replaying recorded (steps 0-3)", "steps run: 4", "accepted envs per skill",
		"solve_rate_hint", "mean_regret", "band_share", "memory after the last pool end", "designer"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}
