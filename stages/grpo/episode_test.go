package grpo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// episodeCall is an Agent call with the given prompt and completion; logprobs -0.1·(i+1) per token.
func episodeCall(id string, prompt, completion []int32) schemas.LLMCallRow {
	lp := make([]float32, len(completion))
	for i := range lp {
		lp[i] = -0.1 * float32(i+1)
	}
	return schemas.LLMCallRow{Step: 1, CallID: id, Role: schemas.RoleAgent, Request: "{}", ResponseText: "x",
		PromptTokenIDs: prompt, CompletionTokenIDs: completion, CompletionLogprobs: lp, CompletionTokens: int64(len(completion))}
}

func cat(parts ...[]int32) []int32 {
	var out []int32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// threeTurnEpisode is a play of three Agent turns whose prompts extend one another: system/user prompt
// [1 2 3], completions [20 21], [22], [23 24], and the template's tokens between them [30 31 32] and [33].
func threeTurnEpisode(id string, ret float64, endedBy schemas.EndedBy) (schemas.EpisodeRow, []schemas.TurnRow, []schemas.LLMCallRow) {
	first := []int32{1, 2, 3}
	c0, c1, c2 := []int32{20, 21}, []int32{22}, []int32{23, 24}
	calls := []schemas.LLMCallRow{
		episodeCall(id+"-c0", first, c0),
		episodeCall(id+"-c1", cat(first, c0, []int32{30, 31, 32}), c1),
		episodeCall(id+"-c2", cat(first, c0, []int32{30, 31, 32}, c1, []int32{33}), c2),
	}
	turns := []schemas.TurnRow{
		{Step: 1, EpisodeID: id, Turn: 2, CallID: id + "-c2"},
		{Step: 1, EpisodeID: id, Turn: 0, CallID: id + "-c0"},
		{Step: 1, EpisodeID: id, Turn: 1, CallID: id + "-c1"},
	}
	ep := schemas.EpisodeRow{Step: 1, EpisodeID: id, EnvID: "env", Return: ret, EndedBy: endedBy, Turns: 3}
	return ep, turns, calls
}

func TestEpisodeSampleMasksTheTemplatesTokens(t *testing.T) {
	ep, turns, calls := threeTurnEpisode("ep1", 1, schemas.EndedDone)
	ep2, turns2, calls2 := threeTurnEpisode("ep2", 0, schemas.EndedDone)
	ep2.Index = 1
	rows, err := AgentSamples(AgentInput{Episodes: []schemas.EpisodeRow{ep, ep2}, Turns: append(turns, turns2...),
		Calls: append(calls, calls2...), Unit: config.SampleEpisode})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("want one sample per episode, got %d", len(rows))
	}
	r := rows[0]
	wantResp := []int32{20, 21, 30, 31, 32, 22, 33, 23, 24}
	wantMask := []int8{1, 1, 0, 0, 0, 1, 0, 1, 1}
	wantLP := []float32{-.1, -.2, 0, 0, 0, -.1, 0, -.1, -.2}
	if r.SampleID != "ep1" || r.EpisodeID != "ep1" || fmt.Sprint(r.PromptIDs) != "[1 2 3]" ||
		fmt.Sprint(r.ResponseIDs) != fmt.Sprint(wantResp) || fmt.Sprint(r.LossMask) != fmt.Sprint(wantMask) ||
		fmt.Sprint(r.OldLogprobs) != fmt.Sprint(wantLP) {
		t.Fatalf("episode sample:\n id %s prompt %v\n response %v\n mask %v\n logprobs %v", r.SampleID, r.PromptIDs, r.ResponseIDs, r.LossMask, r.OldLogprobs)
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	// Two plays, returns 1 and 0: ±1/√2 with the sample std, ±1 with the population std.
	if math.Abs(rows[0].Advantage-1/math.Sqrt2) > 1e-5 || math.Abs(rows[1].Advantage+1/math.Sqrt2) > 1e-5 {
		t.Fatalf("advantages %v %v", rows[0].Advantage, rows[1].Advantage)
	}
	pop, err := AgentSamples(AgentInput{Episodes: []schemas.EpisodeRow{ep, ep2}, Turns: append(turns, turns2...),
		Calls: append(calls, calls2...), Unit: config.SampleEpisode, Std: config.AdvStdPopulation})
	if err != nil || math.Abs(pop[0].Advantage-1) > 1e-6 || math.Abs(pop[1].Advantage+1) > 1e-6 {
		t.Fatalf("population advantages: %v %+v", err, pop)
	}
	// The same play as turns: three samples, no mask.
	perTurn, err := AgentSamples(AgentInput{Episodes: []schemas.EpisodeRow{ep}, Turns: turns, Calls: calls})
	if err != nil || len(perTurn) != 3 || perTurn[0].LossMask != nil {
		t.Fatalf("turn samples: %v, %d", err, len(perTurn))
	}
}

func TestEpisodeSampleRejectsARerenderedHistory(t *testing.T) {
	ep, turns, calls := threeTurnEpisode("ep-broken", 1, schemas.EndedDone)
	// The template re-renders turn 0's completion (as Qwen3's does with a past think block).
	calls[2].PromptTokenIDs = cat([]int32{1, 2, 3}, []int32{21}, []int32{30, 31, 32}, []int32{22}, []int32{33})
	_, err := AgentSamples(AgentInput{Episodes: []schemas.EpisodeRow{ep}, Turns: turns, Calls: calls, Unit: config.SampleEpisode})
	if !errors.Is(err, ErrBrokenPrefix) {
		t.Fatalf("want ErrBrokenPrefix, got %v", err)
	}
	for _, want := range []string{"episode ep-broken", "turn 2", "token 3", "grpo.sample_unit = turn", "chat template"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

func TestPopulationAdvantageByHand(t *testing.T) {
	for _, tc := range []struct {
		returns, want []float64
	}{
		{[]float64{1, 0, 0, 1}, []float64{1, -1, -1, 1}},                              // mean .5, σ .5
		{[]float64{1, 0, 0}, []float64{math.Sqrt2, -1 / math.Sqrt2, -1 / math.Sqrt2}}, // mean 1/3, σ √2/3
		{[]float64{0.1, 0.1, 0.1}, []float64{0, 0, 0}},                                // equal: exactly 0
		{[]float64{0.7}, []float64{0}},                                                // a group of one
		{[]float64{2, -1, 0.5, 0.5}, []float64{1.4142135, -1.4142135, 0, 0}},          // mean .5, σ √(9/8)
	} {
		got := ComputeGRPOPopulationAdvantage(tc.returns, PopulationAdvantageEpsilon)
		for i := range got {
			if math.Abs(got[i]-tc.want[i]) > 1e-6 {
				t.Fatalf("%v: got %v, want %v", tc.returns, got, tc.want)
			}
		}
	}
}

func TestFailedPlays(t *testing.T) {
	won, wt, wc := threeTurnEpisode("won", 1, schemas.EndedDone)
	lost, lt, lc := threeTurnEpisode("lost", 0, schemas.EndedMaxTurns)
	crashed, ct, cc := threeTurnEpisode("crashed", 0.5, schemas.EndedAgentError)
	broken, bt, bc := threeTurnEpisode("broken", 0.5, schemas.EndedEnvError)
	lost.Index, crashed.Index, broken.Index = 1, 2, 3
	in := AgentInput{Episodes: []schemas.EpisodeRow{won, lost, crashed, broken}, Turns: cat4(wt, lt, ct, bt), Calls: cat4(wc, lc, cc, bc),
		Unit: config.SampleEpisode, Std: config.AdvStdPopulation}
	advantages := func(failed config.FailedPlay) map[string]float64 {
		in.Failed = failed
		rows, err := AgentSamples(in)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, r := range rows {
			out[r.EpisodeID] = r.Advantage
		}
		return out
	}
	// env_error: the env_error play is out, the agent_error play counts with its return 0.5.
	got := advantages(config.FailedEnvError)
	if len(got) != 3 || got["crashed"] != 0 || !(got["won"] > 0 && got["lost"] < 0) {
		t.Fatalf("env_error: %v", got)
	}
	// drop: both failed plays are out; won/lost are ±1.
	got = advantages(config.FailedDrop)
	if len(got) != 2 || math.Abs(got["won"]-1) > 1e-6 || math.Abs(got["lost"]+1) > 1e-6 {
		t.Fatalf("drop: %v", got)
	}
	// minus_one: returns (1, 0, −1, −1), mean −1/4, σ √(11)/4; failed plays give no sample.
	got = advantages(config.FailedMinusOne)
	sigma := math.Sqrt(11) / 4
	if len(got) != 2 || math.Abs(got["won"]-1.25/sigma) > 1e-6 || math.Abs(got["lost"]-0.25/sigma) > 1e-6 {
		t.Fatalf("minus_one: %v (want won %v, lost %v)", got, 1.25/sigma, 0.25/sigma)
	}
}

func cat4[T any](a, b, c, d []T) []T {
	return append(append(append(append([]T{}, a...), b...), c...), d...)
}

// batchRows makes n samples of a role with advantage 1 and two response tokens.
func batchRows(role schemas.Role, n int) []schemas.GRPOBatchRow {
	out := make([]schemas.GRPOBatchRow, n)
	for i := range out {
		out[i] = schemas.GRPOBatchRow{Role: role, SampleID: fmt.Sprintf("%s-%d", role, i), EnvID: fmt.Sprintf("env%d", i%24),
			PromptIDs: []int32{1, 2}, ResponseIDs: []int32{3, 4}, OldLogprobs: []float32{-1, -1}, Advantage: 1, ISWeight: 1}
	}
	return out
}

func TestMixedBatchPutsTheDesignerFirstAndCuts(t *testing.T) {
	m := AssignMixedBatch(batchRows(schemas.RoleAgent, 192), batchRows(schemas.RoleDesigner, 24), 192, 7, 3, true)
	if len(m.Rows) != 192 || m.Real != 192 || m.Trimmed != 24 || m.Padded != 0 || m.AdvantageScale != 1 {
		t.Fatalf("full batch: %d rows, %+v", len(m.Rows), m)
	}
	for i, r := range m.Rows {
		if (i < 24) != (r.Role == schemas.RoleDesigner) || r.Batch != 0 || r.Step != 3 || r.Advantage != 1 {
			t.Fatalf("row %d: %+v", i, r)
		}
	}
}

func TestMixedBatchPadsAShortBatch(t *testing.T) {
	m := AssignMixedBatch(batchRows(schemas.RoleAgent, 150), nil, 192, 7, 3, true)
	if len(m.Rows) != 192 || m.Real != 150 || m.Padded != 42 || math.Abs(m.AdvantageScale-192.0/150) > 1e-12 {
		t.Fatalf("short batch: %d rows, %+v", len(m.Rows), m)
	}
	ids := map[string]bool{}
	for i, r := range m.Rows {
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		if ids[r.SampleID] {
			t.Fatalf("duplicate sample id %s", r.SampleID)
		}
		ids[r.SampleID] = true
		if i < 150 && (r.Pad || math.Abs(r.Advantage-192.0/150) > 1e-12) {
			t.Fatalf("real row %d: %+v", i, r)
		}
		if i >= 150 && (!r.Pad || r.Advantage != 0 || len(r.LossMask) != len(r.ResponseIDs) || r.Trained(0) || r.Batch != 0) {
			t.Fatalf("pad row %d: %+v", i, r)
		}
	}
	// With a KL term the authors leave the advantages unscaled.
	if m := AssignMixedBatch(batchRows(schemas.RoleAgent, 150), nil, 192, 7, 3, false); m.AdvantageScale != 1 || m.Rows[0].Advantage != 1 || m.Padded != 42 {
		t.Fatalf("unscaled: %+v", m)
	}
	if m := AssignMixedBatch(nil, nil, 192, 7, 3, true); len(m.Rows) != 0 {
		t.Fatalf("no samples: %+v", m)
	}
}

func TestMixedRolesTrainOneStepOfTheGlobalBatch(t *testing.T) {
	cfg := config.Default()
	cfg.GRPO.MixRoles, cfg.GRPO.ModelPath, cfg.GRPO.Trainer, cfg.GRPO.Publish = true, t.TempDir(), config.TrainerTorch, config.PublishNone
	cfg.GRPO.TrainerMode = config.TrainerPerStep
	tr, err := newTorchTrainer(TrainerOptions{Config: cfg, Run: "r"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.(*torchTrainer).settings(1)
	if err != nil || s.SampleMeanDenominator != 192 {
		t.Fatalf("sample_mean_denominator %d (%v), want global_batch 192", s.SampleMeanDenominator, err)
	}
	cfg.GRPO.MixRoles = false
	if s, _ := tr.(*torchTrainer).settings(1); s.SampleMeanDenominator != 0 {
		t.Fatalf("without mix_roles: %d", s.SampleMeanDenominator)
	}
	cfg.GRPO.Publish, cfg.GRPO.LoRARank, cfg.GRPO.PublishURLs = config.PublishSGLang, 0, "http://a:1/v1, http://b:2"
	if s, _ := tr.(*torchTrainer).settings(1); fmt.Sprint(s.Publish.URLs) != "[http://a:1/v1 http://b:2]" || s.Publish.Mode != "sglang" {
		t.Fatalf("publish settings %+v", s.Publish)
	}
}

func TestMixedRolesThroughTheStage(t *testing.T) {
	lk, run := goldenLake(t, func(c *config.Config) { c.GRPO.MixRoles, c.GRPO.GlobalBatch = true, 40 })
	ctx := context.Background()
	res, err := stage.Within(ctx, testEnv(t, lk, run, shard.All), stage.GRPO, 1, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, nil) }) // the pool's last step: both roles
	if err != nil {
		t.Fatal(err)
	}
	rows, err := lake.ReadRows[schemas.GRPOBatchRow](ctx, lk, partition(run, schemas.GRPOBatchesSpec.Name, 1))
	if err != nil {
		t.Fatal(err)
	}
	if res.Batches != 1 || len(rows) != 40 || res.DesignerSamples == 0 {
		t.Fatalf("one global batch of 40 rows with the Designer's samples: %+v, %d rows", res, len(rows))
	}
	designerDone := false
	for _, r := range rows {
		if r.Role == schemas.RoleAgent && !r.Pad {
			designerDone = true
		}
		if r.Role == schemas.RoleDesigner && !r.Pad && designerDone {
			t.Fatalf("a Designer sample after an Agent sample: %s", r.SampleID)
		}
	}
}

// A turn masked from the loss (a malformed tool call under rollout.malformed_tool_call mask) keeps its
// tokens in the play's sample as context, loss mask 0, and its turn sample has every token masked;
// the other turns train as before.
func TestMaskedTurnLeavesTheLoss(t *testing.T) {
	ep, turns, calls := threeTurnEpisode("ep-mask", 1, schemas.EndedDone)
	ep2, turns2, calls2 := threeTurnEpisode("ep-other", 0, schemas.EndedDone)
	ep2.Index = 1
	for i := range turns {
		if turns[i].Turn == 1 {
			turns[i].ParseError = schemas.MaskedTurnPrefix + "a <tool_call> from which no call could be read"
		}
	}
	rows, err := AgentSamples(AgentInput{Episodes: []schemas.EpisodeRow{ep, ep2}, Turns: append(turns, turns2...),
		Calls: append(calls, calls2...), Unit: config.SampleEpisode})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(rows[0].LossMask), fmt.Sprint([]int8{1, 1, 0, 0, 0, 0, 0, 1, 1}); got != want {
		t.Fatalf("mask %s, want %s (turn 1's token 22 masked)", got, want)
	}
	if got := fmt.Sprint(rows[1].LossMask); got != fmt.Sprint([]int8{1, 1, 0, 0, 0, 1, 0, 1, 1}) {
		t.Fatalf("the other play's mask %s", got)
	}
	perTurn, err := AgentSamples(AgentInput{Episodes: []schemas.EpisodeRow{ep}, Turns: turns, Calls: calls})
	if err != nil || len(perTurn) != 3 {
		t.Fatalf("turn samples: %v, %d", err, len(perTurn))
	}
	for _, s := range perTurn {
		masked := s.LossMask != nil
		if masked != (s.SampleID == "ep-mask-c1#1") || (masked && fmt.Sprint(s.LossMask) != "[0]") {
			t.Fatalf("turn sample %s: mask %v", s.SampleID, s.LossMask)
		}
	}
}
