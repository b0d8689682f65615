package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// fakeStage commits an empty partition of its marker table and logs "stage@step" to calls.
type fakeStage struct {
	name    stage.Name
	refresh bool
	marker  string
	run     func(ctx context.Context, step int64) error
}

func (f *fakeStage) Name() stage.Name     { return f.name }
func (f *fakeStage) Reads() []stage.Input { return nil }
func (f *fakeStage) Writes() []string     { return []string{f.marker} }
func (f *fakeStage) Due(cfg *config.Config, step int64) bool {
	return !f.refresh || stage.RefreshDue(cfg, step)
}
func (f *fakeStage) Run(ctx context.Context, _ *stage.Env, step int64) (string, error) {
	return "", f.run(ctx, step)
}

// fakeStages are the six stages as fakeStage values.
func fakeStages(lk *lake.Lake, run string, calls *[]string, fail map[string]error) []stage.Stage {
	mk := func(name stage.Name, refresh bool, marker string) stage.Stage {
		return &fakeStage{name: name, refresh: refresh, marker: marker, run: func(ctx context.Context, step int64) error {
			id := fmt.Sprintf("%s@%d", name, step)
			*calls = append(*calls, id)
			if err := fail[id]; err != nil {
				return err
			}
			return writeEmpty(ctx, lk, lake.PartitionKey{Run: run, Table: marker, Step: step})
		}}
	}
	return []stage.Stage{
		mk(stage.Sample, true, schemas.SamplesSpec.Name), mk(stage.Generate, true, schemas.CandidatesSpec.Name),
		mk(stage.Gate, true, schemas.EnvsSpec.Name), mk(stage.Rollout, false, schemas.EpisodesSpec.Name),
		mk(stage.Regret, false, schemas.DesignerRewardsSpec.Name), mk(stage.GRPO, false, schemas.TrainMetricsSpec.Name),
	}
}

// runEnv returns the Env of run.
func runEnv(t *testing.T, lk *lake.Lake, run string) *stage.Env {
	t.Helper()
	env, err := stage.NewEnv(context.Background(), lk, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// writeEmpty commits an empty partition of the key's table, with the table's row type.
func writeEmpty(ctx context.Context, lk *lake.Lake, k lake.PartitionKey) error {
	var err error
	switch k.Table {
	case schemas.SamplesSpec.Name:
		_, err = laketest.Commit[schemas.SampleRow](ctx, lk, k, nil, lake.WriteOptions{})
	case schemas.CandidatesSpec.Name:
		_, err = laketest.Commit[schemas.CandidateRow](ctx, lk, k, nil, lake.WriteOptions{})
	case schemas.EnvsSpec.Name:
		_, err = laketest.Commit[schemas.EnvRow](ctx, lk, k, nil, lake.WriteOptions{})
	case schemas.EpisodesSpec.Name:
		_, err = laketest.Commit[schemas.EpisodeRow](ctx, lk, k, nil, lake.WriteOptions{})
	case schemas.DesignerRewardsSpec.Name:
		_, err = laketest.Commit[schemas.DesignerRewardRow](ctx, lk, k, nil, lake.WriteOptions{})
	case schemas.TrainMetricsSpec.Name:
		_, err = laketest.Commit[schemas.TrainMetricsRow](ctx, lk, k, nil, lake.WriteOptions{})
	default:
		err = fmt.Errorf("writeEmpty: no row type for %s", k.Table)
	}
	return err
}

// newLake is a new lake holding run "r" with a pool refresh every 2 steps.
func newLake(t *testing.T) (*lake.Lake, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 2
	return laketest.Run(t, cfg)
}

func TestOrderScheduleAndResume(t *testing.T) {
	ctx := context.Background()
	lk, run := newLake(t)
	var calls []string
	boom := errors.New("boom")
	stages := fakeStages(lk, run, &calls, map[string]error{"regret@2": boom})
	var out bytes.Buffer
	_, err := Run(ctx, runEnv(t, lk, run), stepRange(0, 3), Options{Stages: stages, Out: &out})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "step 2: regret") {
		t.Fatalf("want the stage's error with step and stage, got %v", err)
	}
	want := "sample@0 generate@0 gate@0 rollout@0 regret@0 grpo@0 rollout@1 regret@1 grpo@1 sample@2 generate@2 gate@2 rollout@2 regret@2"
	if got := strings.Join(calls, " "); got != want {
		t.Fatalf("calls:\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(out.String(), "regret") || !strings.Contains(out.String(), "total s") {
		t.Fatalf("no time table after a failure:\n%s", out.String())
	}
	// Resume: committed stages are not started again; the run continues at regret@2.
	calls = nil
	stages = fakeStages(lk, run, &calls, nil)
	rep, err := Run(ctx, runEnv(t, lk, run), stepRange(0, 3), Options{Stages: stages})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(calls, " "); got != "regret@2 grpo@2 rollout@3 regret@3 grpo@3" {
		t.Fatalf("resume ran %s", got)
	}
	if rep.Steps != 2 || rep.Resumed != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, tm := range rep.Timings {
		if tm.Stage == stage.Regret && (tm.Ran != 2 || tm.Skipped != 2) {
			t.Fatalf("regret timing %+v", tm)
		}
	}
}

func TestInterruptStopsBeforeTheNextStage(t *testing.T) {
	lk, run := newLake(t)
	ctx, cancel := context.WithCancel(context.Background())
	var calls []string
	stages := fakeStages(lk, run, &calls, nil)
	// Rollout at step 1 is "interrupted": Ctrl-C arrives while it runs; it still commits (a write in
	// progress completes), and nothing after it starts.
	rollout := stages[3].(*fakeStage)
	inner := rollout.run
	rollout.run = func(c context.Context, step int64) error {
		if step == 1 {
			cancel()
		}
		return inner(context.WithoutCancel(c), step)
	}
	_, err := Run(ctx, runEnv(t, lk, run), stepRange(0, 3), Options{Stages: stages})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if got := strings.Join(calls, " "); !strings.HasSuffix(got, "grpo@0 rollout@1") {
		t.Fatalf("stages after the interrupt ran: %s", got)
	}
	done, _ := lk.Committed(context.Background(), lake.PartitionKey{Run: run, Table: schemas.EpisodesSpec.Name, Step: 1})
	if !done {
		t.Fatalf("the write in progress at the interrupt was not completed")
	}
}

func TestSelectAndParseSteps(t *testing.T) {
	var calls []string
	stages := fakeStages(nil, "r", &calls, nil)
	got, err := Select(stages, []string{"grpo", "regret"})
	if err != nil || len(got) != 2 || got[0].Name() != stage.Regret || got[1].Name() != stage.GRPO {
		t.Fatalf("Select = %v, %v", got, err)
	}
	if _, err := Select(stages, []string{"train"}); err == nil || !strings.Contains(err.Error(), "rollout") {
		t.Fatalf("unknown stage: %v", err)
	}
}

// stepRange returns from..to inclusive.
func stepRange(from, to int64) []int64 {
	var steps []int64
	for s := from; s <= to; s++ {
		steps = append(steps, s)
	}
	return steps
}

// TestParseSteps pins the --steps grammar: A, A-B, comma lists of both (sorted, without repeats); every
// other form is rejected, never read as a prefix.
func TestParseSteps(t *testing.T) {
	for in, want := range map[string][]int64{
		"0-7":         stepRange(0, 7),
		"5":           {5},
		" 3-3 ":       {3},
		"1,3":         {1, 3},
		"0-3,8,10-11": {0, 1, 2, 3, 8, 10, 11},
		"8, 0-2":      {0, 1, 2, 8},
		"2-4,3-5":     {2, 3, 4, 5},
		"007":         {7},
		"399":         {399},
	} {
		got, err := ParseSteps(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ParseSteps(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", " ", "7-0", "-1", "a-b", "1-", "-", "2..3", "3x", "1,,2", "1,", ",1",
		"1-2-3", "+1", "1 2", "1.5", "0x10", "1-3a", "99999999999999999999", "0-2000000"} {
		if got, err := ParseSteps(bad); err == nil {
			t.Errorf("ParseSteps(%q) = %v: want an error", bad, got)
		} else if !strings.Contains(err.Error(), "0-3,8,10-11") {
			t.Errorf("ParseSteps(%q): the error does not show the grammar: %v", bad, err)
		}
	}
}

func TestConcurrentWriterLossIsRetried(t *testing.T) {
	lk, run := newLake(t)
	var calls []string
	stages := fakeStages(lk, run, &calls, nil)
	regret := stages[4].(*fakeStage)
	inner := regret.run
	lost := 0
	regret.run = func(ctx context.Context, step int64) error {
		if lost < 2 {
			lost++
			return fmt.Errorf("regret: write: %w", lake.ErrConcurrentWriter)
		}
		return inner(ctx, step)
	}
	if _, err := Run(context.Background(), runEnv(t, lk, run), stepRange(0, 0), Options{Stages: stages}); err != nil {
		t.Fatalf("a rolled-forward commit must be retried: %v", err)
	}
	if got := strings.Count(strings.Join(calls, " "), "regret@0"); got != 1 || lost != 2 {
		t.Fatalf("regret ran %d times to completion after %d losses", got, lost)
	}
	// Other errors are not retried.
	calls = nil
	boom := errors.New("boom")
	stages = fakeStages(lk, run, &calls, map[string]error{"rollout@1": boom})
	if _, err := Run(context.Background(), runEnv(t, lk, run), stepRange(1, 1), Options{Stages: stages}); !errors.Is(err, boom) || strings.Count(strings.Join(calls, " "), "rollout@1") != 1 {
		t.Fatalf("got %v after %v", err, calls)
	}
}
