package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// inPty runs spade with args on a pseudo-terminal (stdin, stdout and stderr), 120 columns wide, and
// returns everything it wrote and its exit code.
func inPty(t *testing.T, dir string, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(spadeBin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	defer f.Close()
	var out bytes.Buffer
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(&out, f) // ends with EIO when the process exits
		close(done)
	}()
	err = cmd.Wait()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil && !errors.Is(err, syscall.EIO) {
		t.Fatalf("spade %v: %v", args, err)
	}
	return out.String(), code
}

// TestProgressOnATerminal: on a terminal a long command draws a bar with its count, rate and time left,
// and `spade run` prints one line per stage and step with its time instead of log lines.
func TestProgressOnATerminal(t *testing.T) {
	env := localEnv(t)
	out, code := inPty(t, ".", env, "--run", "s", "synth", "--steps", "0-23")
	if code != 0 {
		t.Fatalf("synth on a pty: exit %d\n%s", code, out)
	}
	for _, re := range []string{`synth`, `\d+/24`, `steps/s`, `\[\d+s:\d+s\]`, `wrote synthetic run s`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("synth on a terminal lacks %q:\n%q", re, out)
		}
	}
	if strings.Contains(out, "level=INFO") {
		t.Errorf("raw log lines on a terminal:\n%s", out)
	}
	out, code = inPty(t, ".", env, "--run", "s", "metrics", "--model", "solve_rates", "--format", "csv")
	if code != 0 || !strings.Contains(out, "step") {
		t.Fatalf("metrics on a pty: exit %d\n%s", code, out)
	}

	root, _ := filepath.Abs(repoFile("."))
	env = append(env, "SPADE_RUN=demo")
	must(t, env, "corpus", "import", "--name", "default", filepath.Join(root, "testdata", "corpus", "corpus.jsonl"))
	if r := spadeIn(t, root, env, "init", "--preset", "qwen3-4b-games", "--config", "testdata/sample-run/replay.json"); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	out, code = inPty(t, t.TempDir(), env, "run", "--steps", "0", "--only", "sample,generate")
	if code != 0 {
		t.Fatalf("run on a pty: exit %d\n%s", code, out)
	}
	for _, re := range []string{`step 0  sample +\d+\.\d\ds  \S`, `step 0  generate +\d+\.\d\ds  \S`, `steps run: 1`} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("run on a terminal lacks %q:\n%s", re, out)
		}
	}
	if strings.Contains(out, "level=INFO") {
		t.Errorf("raw log lines on a terminal:\n%s", out)
	}
	out, _ = inPty(t, t.TempDir(), env, "run", "--steps", "0", "--only", "sample,generate")
	if !strings.Contains(out, "step 0  sample   already committed") {
		t.Errorf("a resumed run does not say what it skipped:\n%s", out)
	}
}

// TestProgressOffATerminal: with output to pipes (or --log-format json) progress is log lines at the
// interval, never a redrawn bar.
func TestProgressOffATerminal(t *testing.T) {
	env := append(localEnv(t), "SPADE_PROGRESS_INTERVAL=1ms")
	r := spade(t, env, "", "--run", "s", "synth", "--steps", "0-23")
	if r.code != 0 {
		t.Fatalf("synth: %d %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "synth: progress") || !strings.Contains(r.stderr, "of=24") || strings.Contains(r.stderr, "\r") {
		t.Errorf("synth off a terminal: want progress log lines, no bar:\n%q", r.stderr)
	}
	// lake verify counts the files it hashes.
	if r := spade(t, env, "", "--run", "s", "lake", "verify"); r.code != 0 || !strings.Contains(r.stderr, "verify s: progress") || !strings.Contains(r.stderr, "files") {
		t.Errorf("lake verify off a terminal: exit %d, want progress log lines counting files:\n%q", r.code, r.stderr)
	}
	// ablate counts its phases: the embeddings, then one per run.
	if r := spade(t, env, "", "--run", "s3", "synth", "--steps", "0-23"); r.code != 0 {
		t.Fatalf("synth s3: %d %s", r.code, r.stderr)
	}
	if r := spade(t, env, "", "--run", "s", "--run", "s3", "ablate"); r.code != 0 || !strings.Contains(r.stderr, "ablate: progress") || !strings.Contains(r.stderr, "of=3") {
		t.Errorf("ablate off a terminal: exit %d, want progress log lines over 3 phases:\n%q", r.code, r.stderr)
	}
	out, code := inPty(t, ".", env, "--log-format", "json", "--run", "s2", "synth", "--steps", "0-23")
	if code != 0 || !strings.Contains(out, `"msg":"synth: progress"`) || strings.Contains(out, "\r\x1b[K") {
		t.Errorf("synth with --log-format json on a terminal: want JSON progress lines, no bar (exit %d):\n%q", code, out)
	}
}
