package view

import (
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// TestRunsPageCountsTrainedSteps: a run's "steps committed" are the steps whose grpo stage committed
// train_metrics, also when a stage that runs only some steps (eval) comes after it in the stage list.
func TestRunsPageCountsTrainedSteps(t *testing.T) {
	lk, run := synthLake(t, 4)
	for _, step := range []int64{0, 1, 2} {
		laketest.Write(t, lk, lake.PartitionKey{Run: run, Table: schemas.TrainMetricsSpec.Name, Step: step},
			[]schemas.TrainMetricsRow{{Step: step, Role: schemas.RoleAgent, Samples: 8, Tokens: 100}})
	}
	stages := append(append([]StageMarker{}, testStages...), StageMarker{"eval", "eval_results"})
	ts := startServer(t, lk, Options{Stages: stages})
	found := false
	for _, r := range get(t, ts, "/api/runs", 200)["runs"].([]any) {
		rv := r.(map[string]any)
		if rv["run"] != run {
			continue
		}
		found = true
		if got := rv["steps_committed"]; got != float64(3) {
			t.Errorf("run %s: steps_committed = %v, want 3 (the steps with train_metrics; eval committed none)", run, got)
		}
	}
	if !found {
		t.Fatalf("/api/runs does not list run %s", run)
	}
}
