package grpo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// leftOutLake writes step 0 of a run with 20 two-turn plays of one env, as episode samples: every play's
// second prompt extends its first prompt and completion, except the broken plays (a drifted token in
// the second prompt) and the tokenless plays (their second call has no token ids).
func leftOutLake(t *testing.T, broken, tokenless []int) (*lake.Lake, string) {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 2         // step 0 is not a pool end: Agent samples only
	cfg.GRPO.BatchFill = config.FillPad // the real samples alone, so the count below is theirs
	laketest.NewRun(t, lk, "r", cfg)
	var episodes []schemas.EpisodeRow
	var turns []schemas.TurnRow
	var calls []schemas.LLMCallRow
	isIn := func(k int, list []int) bool {
		for _, x := range list {
			if x == k {
				return true
			}
		}
		return false
	}
	for k := 0; k < 20; k++ {
		id := fmt.Sprintf("ep%02d", k)
		episodes = append(episodes, schemas.EpisodeRow{Step: 0, EnvID: "A", EpisodeID: id, Index: int32(k),
			Return: float64(k % 2), EndedBy: schemas.EndedDone})
		first := schemas.LLMCallRow{Step: 0, CallID: id + "/0", Role: schemas.RoleAgent, Request: "{}", ResponseText: "a",
			PromptTokenIDs: []int32{1, 2}, CompletionTokenIDs: []int32{int32(10 + k), 3}, CompletionLogprobs: []float32{-.5, -.1},
			CompletionTokens: 2, PromptTokens: 2}
		prompt2 := []int32{1, 2, int32(10 + k), 3, 7, 8}
		if isIn(k, broken) {
			prompt2[2] = 99 // the completion came back re-tokenized
		}
		second := schemas.LLMCallRow{Step: 0, CallID: id + "/1", Role: schemas.RoleAgent, Request: "{}", ResponseText: "b",
			PromptTokenIDs: prompt2, CompletionTokenIDs: []int32{4, 3}, CompletionLogprobs: []float32{-.2, -.3},
			CompletionTokens: 2, PromptTokens: 6}
		if isIn(k, tokenless) {
			second.PromptTokenIDs, second.CompletionTokenIDs, second.CompletionLogprobs = nil, nil, nil
		}
		calls = append(calls, first, second)
		turns = append(turns, schemas.TurnRow{Step: 0, EpisodeID: id, EnvID: "A", Turn: 0, CallID: first.CallID},
			schemas.TurnRow{Step: 0, EpisodeID: id, EnvID: "A", Turn: 1, CallID: second.CallID})
	}
	for _, w := range []error{
		func() error {
			_, err := laketest.Commit(ctx, lk, partition("r", schemas.EpisodesSpec.Name, 0), episodes, lake.WriteOptions{})
			return err
		}(),
		func() error {
			_, err := laketest.Commit(ctx, lk, partition("r", schemas.TurnsSpec.Name, 0), turns, lake.WriteOptions{})
			return err
		}(),
		func() error {
			_, err := laketest.Commit(ctx, lk, partition("r", schemas.LLMCallsSpec.Name, 0), calls, lake.WriteOptions{})
			return err
		}(),
	} {
		if w != nil {
			t.Fatal(w)
		}
	}
	return lk, "r"
}

// TestOneBadPlayIsLeftOutAndTheStepCommits checks that a play whose sequence is broken is left out of
// training, counted by cause in the closing line and in train_metrics, and that the step commits.
func TestOneBadPlayIsLeftOutAndTheStepCommits(t *testing.T) {
	ctx := context.Background()
	lk, run := leftOutLake(t, []int{3}, nil)
	trainer := &recordingTrainer{}
	line, err := stage.Within(ctx, testEnv(t, lk, run, shard.All), stage.GRPO, 0, Stage{Trainer: trainer}.Run)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(line, "19 agent") || !strings.Contains(line, "1 of 20 plays left out (broken_prefix 1)") {
		t.Fatalf("closing line %q", line)
	}
	real := 0
	for _, r := range trainer.rows {
		if r.EpisodeID == "ep03" && !r.Pad {
			t.Fatalf("the broken play was trained: %+v", r)
		}
		if !r.Pad {
			real++
		}
	}
	if real != 19 {
		t.Fatalf("trained %d real samples, want 19", real)
	}
	metrics, err := lake.ReadRows[schemas.TrainMetricsRow](ctx, lk, partition(run, schemas.TrainMetricsSpec.Name, 0))
	if err != nil || len(metrics) != 1 {
		t.Fatalf("train_metrics: %v %v", metrics, err)
	}
	if m := metrics[0]; m.LeftOutBrokenPrefix != 1 || m.LeftOutMissingTokens != 0 || m.LeftOutMissingCall != 0 {
		t.Fatalf("left-out counts %+v", m)
	}
}

// TestTooManyBadPlaysFailTheStep checks that beyond grpo.max_left_out_share the stage fails with a message
// naming the causes and the setting, wrapping the first play's error, and commits nothing.
func TestTooManyBadPlaysFailTheStep(t *testing.T) {
	ctx := context.Background()
	lk, run := leftOutLake(t, []int{3}, []int{8})
	_, err := stage.Within(ctx, testEnv(t, lk, run, shard.All), stage.GRPO, 0, Stage{Trainer: &recordingTrainer{}}.Run)
	if err == nil {
		t.Fatal("2 of 20 plays (10%) left out with a 5% share: the step committed")
	}
	for _, want := range []string{"2 of 20", "broken_prefix 1", "missing_tokens 1", "grpo.max_left_out_share", "ep03"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if !errors.Is(err, ErrBrokenPrefix) {
		t.Errorf("error does not wrap the first play's ErrBrokenPrefix: %v", err)
	}
	for _, table := range []string{schemas.GRPOBatchesSpec.Name, schemas.TrainMetricsSpec.Name} {
		if ok, err := lk.Committed(ctx, partition(run, table, 0)); err != nil || ok {
			t.Errorf("%s committed after the failure (%v)", table, err)
		}
	}
	// Raising the share lets the step train on the rest.
	lk2, run2 := leftOutLake(t, []int{3}, []int{8})
	cfg, err := lk2.RunConfig(ctx, run2)
	if err != nil {
		t.Fatal(err)
	}
	cfg.GRPO.MaxLeftOutShare = 0.1
	a, err := Assemble(ctx, lk2, run2, cfg, 0)
	if err != nil || len(a.Agent) != 18 || a.LeftOut.BrokenPrefix != 1 || a.LeftOut.MissingTokens != 1 || a.Plays != 20 {
		t.Fatalf("with share 0.1: %d samples, %+v of %d plays, %v", len(a.Agent), a.LeftOut, a.Plays, err)
	}
}

// TestLeftOutPlaysKeepTheirGroupReturns checks that leaving a play out does not change the other plays'
// advantages: its return still counts in the group.
func TestLeftOutPlaysKeepTheirGroupReturns(t *testing.T) {
	in := func(broken []int) AgentAssembly {
		t.Helper()
		lk, run := leftOutLake(t, broken, nil)
		cfg, err := lk.RunConfig(context.Background(), run)
		if err != nil {
			t.Fatal(err)
		}
		cfg.GRPO.MaxLeftOutShare = 1
		b, err := Assemble(context.Background(), lk, run, cfg, 0)
		if err != nil {
			t.Fatal(err)
		}
		return AgentAssembly{Samples: b.Agent, Plays: b.Plays, LeftOut: b.LeftOut}
	}
	whole, cut := in(nil), in([]int{0, 5})
	adv := map[string]float64{}
	for _, r := range whole.Samples {
		adv[r.EpisodeID] = r.Advantage
	}
	if len(cut.Samples) != 18 || cut.LeftOut.BrokenPrefix != 2 {
		t.Fatalf("%d samples, %+v", len(cut.Samples), cut.LeftOut)
	}
	for _, r := range cut.Samples {
		if r.Advantage != adv[r.EpisodeID] {
			t.Errorf("%s: advantage %g with plays left out, %g without", r.EpisodeID, r.Advantage, adv[r.EpisodeID])
		}
	}
}
