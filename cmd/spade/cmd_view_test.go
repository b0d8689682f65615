package main

import (
	"reflect"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/view"
	steprun "github.com/spadekit/spade/stages/run"
)

// TestViewStageMarkers pins the timeline's stage rows: the real stages' marker tables, pool and gate
// merged since both commit envs last (internal/view's tests use this list).
func TestViewStageMarkers(t *testing.T) {
	want := []view.StageMarker{{Name: "sample", Table: "samples"}, {Name: "generate", Table: "candidates"},
		{Name: "pool/gate", Table: "envs"}, {Name: "rollout", Table: "episodes"}, {Name: "regret", Table: "designer_rewards"},
		{Name: "grpo", Table: "train_metrics"}, {Name: "eval", Table: "eval_results"}}
	if got := stageMarkers(steprun.Stages()); !reflect.DeepEqual(got, want) {
		t.Errorf("stage markers %v, want %v", got, want)
	}
}

// TestViewRefusesAnOpenAddressWithoutAToken: a non-loopback --addr without --token is a usage error.
func TestViewRefusesAnOpenAddressWithoutAToken(t *testing.T) {
	var stderr strings.Builder
	if code := run(t.Context(), []string{"spade", "--lake", t.TempDir(), "view", "--addr", "0.0.0.0:0"}, &stderr); code != exitUsage ||
		!strings.Contains(stderr.String(), "--token") {
		t.Errorf("view --addr 0.0.0.0:0: exit %d, %q; want a usage error naming --token", code, stderr.String())
	}
}
