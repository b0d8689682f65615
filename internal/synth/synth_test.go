package synth

import (
	"context"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// TestSmallRunValidates writes the small run and checks every row against its schema's Validate and the
// run's shape (one partition per step for the per-step tables, one env per accepted slot).
func TestSmallRunValidates(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	o := Small()
	if err := Write(ctx, lk, "r", o); err != nil {
		t.Fatal(err)
	}
	episodes := readValid[schemas.EpisodeRow](t, lk, "episodes")
	if want := o.Steps * o.EnvsPerStep * 2 * o.GroupSize; len(episodes) > want || len(episodes) < want/2 {
		t.Errorf("episodes: %d rows, want about %d", len(episodes), want)
	}
	readValid[schemas.TurnRow](t, lk, "turns")
	readValid[schemas.EnvRow](t, lk, "envs")
	readValid[schemas.CandidateRow](t, lk, "candidates")
	readValid[schemas.GateResultRow](t, lk, "gate_results")
	readValid[schemas.LLMCallRow](t, lk, "llm_calls")
	readValid[schemas.DesignerRewardRow](t, lk, "designer_rewards")
	steps, err := lk.Steps(ctx, "r", "turns")
	if err != nil || len(steps) != o.Steps {
		t.Errorf("turns partitions: %v %v, want %d", steps, err, o.Steps)
	}
	if err := Write(ctx, lk, "r", o); err == nil {
		t.Error("writing an existing run succeeded")
	}
}

func readValid[T schemas.Row](t *testing.T, lk *lake.Lake, table string) []T {
	t.Helper()
	rows, err := lake.ReadTable[T](context.Background(), lk, "r", table)
	if err != nil {
		t.Fatalf("%s: %v", table, err)
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no rows", table)
	}
	for i, r := range rows {
		if err := r.Validate(); err != nil {
			t.Fatalf("%s row %d: %v", table, i, err)
		}
	}
	return rows
}
