package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/synth"
	"github.com/spadekit/spade/internal/tensorboard"
)

// eventFile returns the one event file under dir.
func eventFile(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, "events.out.tfevents.*"))
	if len(m) != 1 {
		t.Fatalf("event files under %s: %v", dir, m)
	}
	return m[0]
}

// spade run --tensorboard writes the figures as the steps commit and prints one line per step;
// spade export tensorboard writes the same values afterwards; bad arguments exit 2.
func TestRunAndExportWriteTensorBoard(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	lk, err := lake.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	o := synth.SmallRollout()
	o.Steps = 6
	if err := synth.WriteRollout(ctx, lk, "r", o); err != nil {
		t.Fatal(err)
	}
	env := []string{"SPADE_LAKE=" + dir, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN="}
	live := filepath.Join(t.TempDir(), "tb")
	out := must(t, env, "--run", "r", "run", "--steps", "0-5", "--only", "regret,grpo", "--tensorboard", live)
	line := regexp.MustCompile(`(?m)^step (\d) \(pool \d\): 6 envs accepted · solve rate [\d.]+% unhinted / [\d.]+% hinted · regret [-+][\d.]+ over \d+ envs · loss (agent \S+|—) · tokens \S+ agent / \S+ designer · [\d.]+s$`)
	if got := line.FindAllString(out, -1); len(got) != 6 {
		t.Errorf("want 6 step lines, got %d:\n%s", len(got), out)
	}
	if strings.Contains(out, "map[") {
		t.Errorf("Go map syntax in the output:\n%s", out)
	}
	liveValues, err := tensorboard.ReadFile(eventFile(t, filepath.Join(live, "r")))
	if err != nil {
		t.Fatal(err)
	}

	exported := t.TempDir()
	msg := must(t, env, "--run", "r", "export", "tensorboard", exported)
	if !strings.Contains(msg, "tensorboard --logdir "+exported) {
		t.Errorf("export's message: %q", msg)
	}
	all, err := tensorboard.ReadFile(eventFile(t, filepath.Join(exported, "r")))
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		tag  string
		step int64
	}
	want := map[key]float64{}
	for _, s := range all {
		want[key{s.Tag, s.Step}] = s.Value
	}
	for _, s := range liveValues {
		if v, ok := want[key{s.Tag, s.Step}]; !ok || v != s.Value {
			t.Errorf("live %s at %d = %g, export %g (%v)", s.Tag, s.Step, s.Value, v, ok)
		}
	}
	// The run's 6 steps fill no metrics window (of 16): the export holds the partial window's figures,
	// the live file every other one.
	for k := range want {
		found := false
		for _, s := range liveValues {
			found = found || (s.Tag == k.tag && s.Step == k.step)
		}
		if !found && !strings.HasPrefix(k.tag, "curriculum/band_share") && !strings.HasPrefix(k.tag, "curriculum/vendi") && !strings.HasPrefix(k.tag, "curriculum/mean_cosine") {
			t.Errorf("%s at %d exported but not written live", k.tag, k.step)
		}
	}
	// The stored rollouts have no gate and grpo trains nothing (trainer none): the figures of the Agent,
	// the regret and the cost are there.
	for _, tag := range []string{"agent/solve_rate_hinted", "agent/return_unhinted", "curriculum/regret", "cost/agent_tokens", "cost/designer_tokens"} {
		if _, ok := want[key{tag, 0}]; !ok {
			t.Errorf("no %s at step 0", tag)
		}
	}

	file := filepath.Join(t.TempDir(), "f")
	os.WriteFile(file, nil, 0o644)
	for _, args := range [][]string{{"--run", "r", "export", "tensorboard"}, {"--run", "r", "export", "tensorboard", file}, {"--run", "nope", "export", "tensorboard", t.TempDir()}} {
		r := spade(t, env, "", args...)
		if first, _, _ := strings.Cut(r.stderr, "\n"); r.code != 2 || !strings.HasPrefix(first, "spade: ") {
			t.Errorf("spade %v: exit %d, stderr %q; want exit 2 and the reason on the first line", args, r.code, r.stderr)
		}
	}
}
