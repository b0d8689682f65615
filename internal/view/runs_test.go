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

// TestRunsPageCountsStepsOfAnUntrainedRun: a run that never trained (the demo's recording has no
// train_metrics) counts the steps of its last stage that ran (regret), not 0.
func TestRunsPageCountsStepsOfAnUntrainedRun(t *testing.T) {
	lk, run := demoLake(t)
	ts := startServer(t, lk, Options{Stages: append(append([]StageMarker{}, testStages...), StageMarker{"eval", "eval_results"})})
	want := truth(t, lk, run, "select count(distinct step) from designer_rewards")[0].(int64)
	if want == 0 {
		t.Fatal("the demo's recording has no designer_rewards")
	}
	for _, r := range get(t, ts, "/api/runs", 200)["runs"].([]any) {
		rv := r.(map[string]any)
		if rv["run"] == run && rv["steps_committed"] != float64(want) {
			t.Errorf("run %s: steps_committed = %v, want %d (the steps regret committed)", run, rv["steps_committed"], want)
		}
	}
}

// TestTimelineCountsLeftOutPlays: the timeline's left_out series has one row per trained step with the
// Agent's left-out plays per cause, read from train_metrics (the Designer's rows do not count).
func TestTimelineCountsLeftOutPlays(t *testing.T) {
	lk, run := synthLake(t, 3)
	rows := map[int64][]schemas.TrainMetricsRow{
		0: {{Step: 0, Role: schemas.RoleAgent, Samples: 40, Tokens: 100},
			{Step: 0, Role: schemas.RoleDesigner, Samples: 4, Tokens: 100, LeftOutMissingCall: 9}},
		1: {{Step: 1, Role: schemas.RoleAgent, Samples: 38, Tokens: 100, LeftOutBrokenPrefix: 2, LeftOutMissingTokens: 1}},
	}
	for step, rs := range rows {
		laketest.Write(t, lk, lake.PartitionKey{Run: run, Table: schemas.TrainMetricsSpec.Name, Step: step}, rs)
	}
	ts := startServer(t, lk, Options{})
	series := get(t, ts, "/api/runs/"+run+"/timeline", 200)["series"].(map[string]any)
	got := dataset(t, series["left_out"], "left_out", "step", "broken_prefix", "missing_tokens", "missing_call", "left_out", "samples")
	want := [][]float64{{0, 0, 0, 0, 0, 40}, {1, 2, 1, 0, 3, 38}}
	if len(got) != len(want) {
		t.Fatalf("left_out series: %d rows, want %d: %v", len(got), len(want), got)
	}
	for i, w := range want {
		row, _ := got[i].([]any)
		if len(row) != len(w) {
			t.Fatalf("left_out row %d = %v, want %v", i, row, w)
		}
		for j := range w {
			if v, _ := row[j].(float64); v != w[j] {
				t.Errorf("left_out row %d column %d = %v, want %v", i, j, row[j], w[j])
			}
		}
	}
}
