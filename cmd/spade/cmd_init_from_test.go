package main

import (
	"context"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// A child run (`init --from RUN@STEP`) holds the parent's partitions up to STEP, records its parent, and
// `spade run` continues it: the next pool draws documents the parent did not use and shows the parent's
// memory to the Designer.
func TestInitFromContinuesTheParent(t *testing.T) {
	srv := startLoopServer(t)
	env := append(localEnv(t), "SPADE_PYTHON=/usr/bin/python3")
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	must(t, env, "corpus", "import", "--name", "testdata", repoFile("testdata/corpus/corpus.jsonl"))
	// Six skills per window: the child's first pool has the parent's skills, so the memory (shown per
	// skill) has entries for it.
	must(t, env, append(append([]string{"--run", "p", "init"}, loopSettings(srv.URL, srv.URL)...), "--set", "sample.skills_per_window=6")...)
	must(t, env, "--run", "p", "run", "--steps", "0-3")

	for _, bad := range [][]string{
		{"--run", "c", "init", "--from", "p@4"},
		{"--run", "c", "init", "--from", "nope@1"},
		{"--run", "c", "init", "--from", "p"},
		{"--run", "c", "init", "--from", "p@3", "--preset", "qwen3-8b-games"},
		{"--run", "c", "init", "--from", "p@3", "--set", "parent.run=x"},
		{"--run", "p", "init", "--from", "p@3"},
	} {
		if r := spade(t, env, "", bad...); r.code != 2 || !isUsageError(r.stderr) {
			t.Errorf("%v: exit %d, %q", bad, r.code, r.stderr)
		}
	}
	out := must(t, env, "--run", "c", "init", "--from", "p@3", "--set", "regret.band_lo=0.2", "--set", "regret.band_hi=0.4")
	if !strings.Contains(out, "from p at step 3") {
		t.Fatalf("init --from: %s", out)
	}
	ctx := context.Background()
	lk, err := lake.Open(ctx, lakeDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := lk.RunConfig(ctx, "c")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Parent == nil || cfg.Parent.Run != "p" || cfg.Parent.Step != 3 || cfg.Regret.BandLo != 0.2 || cfg.Sample.EnvsPerStep != 3 {
		t.Fatalf("child config: parent %+v, band_lo %v, envs_per_step %d", cfg.Parent, cfg.Regret.BandLo, cfg.Sample.EnvsPerStep)
	}
	want, got := dumpRun(t, lakeDir, "p", loopTables), dumpRun(t, lakeDir, "c", loopTables)
	for _, table := range loopTables {
		if got[table] != want[table] || want[table] == "" {
			t.Errorf("%s: the child's copy differs from the parent's (or is empty)", table)
		}
	}
	if r := spade(t, env, "", "--run", "c2", "init", "--from", "p@3"); r.code != 0 {
		t.Fatalf("a second child: %s", r.stderr)
	}
	must(t, env, "--run", "c", "run", "--steps", "4-4")
	parentSamples, err := lake.ReadTable[schemas.SampleRow](ctx, lk, "p", "samples")
	if err != nil {
		t.Fatal(err)
	}
	used := map[string]bool{}
	for _, s := range parentSamples {
		used[s.DocID] = true
	}
	childSamples, err := lake.ReadRows[schemas.SampleRow](ctx, lk, lake.PartitionKey{Run: "c", Table: "samples", Step: 4})
	if err != nil || len(childSamples) != 3 {
		t.Fatalf("child samples at 4: %d, %v", len(childSamples), err)
	}
	for _, s := range childSamples {
		if used[s.DocID] && !s.Reused {
			t.Errorf("the child reuses the parent's document %s", s.DocID)
		}
	}
	calls, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, "c", "llm_calls", 4)
	if err != nil {
		t.Fatal(err)
	}
	memoryShown := 0
	for _, c := range calls {
		if c.Role == schemas.RoleDesigner && strings.Contains(c.Request, "Memory of past environments") {
			memoryShown++
		}
	}
	if memoryShown == 0 {
		t.Error("the child's first pool shows none of the parent's memory")
	}
	if steps, _ := lk.Steps(ctx, "c", "train_metrics"); len(steps) != 5 {
		t.Errorf("child train_metrics at %v, want 0-4", steps)
	}
}
