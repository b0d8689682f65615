package gate

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// AgentTurnDelays reads the Agent's latencies of the latest earlier step that has calls (a rollout
// fragment, as rollout commits them), leaves the other roles' out and cuts each to the cap; the
// strict gate then waits that long between a probe's reset and its step.
func TestAgentTurnDelays(t *testing.T) {
	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	lk, run := laketest.Run(t, cfg)
	ctx := context.Background()
	var rows []schemas.LLMCallRow
	for i, ms := range []float64{900, 300, 12000, 450} {
		rows = append(rows, schemas.LLMCallRow{Step: 1, CallID: fmt.Sprint("a", i), Role: schemas.RoleAgent, Request: "{}", LatencyMS: ms})
	}
	rows = append(rows, schemas.LLMCallRow{Step: 1, CallID: "d", Role: schemas.RoleDesigner, Request: "{}", LatencyMS: 60000})
	laketest.Write(t, lk, lake.PartitionKey{Run: run, Table: schemas.LLMCallsSpec.Name, Step: 1, Fragment: schemas.FragmentRollout}, rows)

	if got, err := AgentTurnDelays(ctx, lk, run, 1, 5*time.Second); err != nil || len(got) != 0 {
		t.Fatalf("at step 1, before any earlier rollout: %v %v", got, err)
	}
	got, err := AgentTurnDelays(ctx, lk, run, 3, 5*time.Second)
	want := []time.Duration{300 * time.Millisecond, 450 * time.Millisecond, 900 * time.Millisecond, 5 * time.Second}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("at step 3: %v %v, want %v", got, err, want)
	}

	// the probes wait one of the delays each: the trivial check's first probe and hint_leak's, which
	// overlap it, at least 200 ms
	pool := newPool(t, sandbox.IsolationBwrap)
	good := readSamples(t, repoPath("testdata", "envs"))[0]
	v := Check(ctx, pool, good.Code, CheckOptions{Setting: good.Setting, Hint: good.Hint, Checks: config.GateStrict,
		TurnDelays: []time.Duration{200 * time.Millisecond}})
	if !v.Accepted {
		t.Fatalf("a sample env: %s", v.FailureText())
	}
	for _, r := range v.Results {
		if r.Check == CheckTrivial && r.Duration < 200*time.Millisecond {
			t.Fatalf("the trivial check took %v with waits of 200 ms: it did not wait the recorded turn delays", r.Duration)
		}
	}
}
