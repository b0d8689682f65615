package grpo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/spadekit/spade/stages/stage"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
)

// goldenEpisodes reads testdata/regret/episodes.csv (step,env_id,skill,hinted,return,success,ended_by).
func goldenEpisodes(t testing.TB) map[int64][]schemas.EpisodeRow {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "testdata", "regret", "episodes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int64][]schemas.EpisodeRow{}
	index := map[string]int32{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		c := strings.Split(line, ",")
		step, _ := strconv.ParseInt(c[0], 10, 64)
		hinted := c[3] == "true"
		ret, _ := strconv.ParseFloat(c[4], 64)
		group := fmt.Sprintf("%d-%s-%v", step, c[1], hinted)
		out[step] = append(out[step], schemas.EpisodeRow{Step: step, EnvID: c[1], Skill: c[2], Hinted: hinted, Index: index[group],
			EpisodeID: fmt.Sprintf("%s-%d", group, index[group]), Return: ret, Success: c[5] == "true", EndedBy: schemas.EndedBy(c[6]), Turns: 2})
		index[group]++
	}
	return out
}

// goldenFinalRewards are the regret_anchor final rewards of the golden pool, hand-computed in
// stages/regret/golden_test.go.
var goldenFinalRewards = map[string]float64{"A": .7625, "B": .2125, "C": .6, "D": 0, "E": 0, "F": .475}

var goldenSkills = map[string]string{"A": schemas.SkillMath, "B": schemas.SkillMath, "F": schemas.SkillMath,
	"C": schemas.SkillLogic, "D": schemas.SkillLogic, "E": schemas.SkillLogic}

func tokenCall(id string, role schemas.Role, step int64, seed int) schemas.LLMCallRow {
	return schemas.LLMCallRow{Step: step, CallID: id, Role: role, Request: "{}", ResponseText: "x",
		PromptTokenIDs: []int32{1, 2, int32(seed)}, CompletionTokenIDs: []int32{int32(seed), 5},
		CompletionLogprobs: []float32{-.5, -.25}, CompletionTokens: 2, PromptTokens: 3}
}

// goldenLake writes the golden episodes with two turns each (one agent call per turn), the pool's envs
// with their Designer calls, and the final designer_rewards of step 1.
func goldenLake(t testing.TB, mutate func(*config.Config)) (*lake.Lake, string) {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 2
	// The goldens were computed per turn, per role, with the n−1 std and an unscaled Designer advantage;
	// the hand-made calls' prompts do not extend one another (episode samples are tested apart).
	cfg.GRPO.SampleUnit, cfg.GRPO.MixRoles, cfg.GRPO.AdvStd, cfg.GRPO.FailedPlay = config.SampleTurn, false, config.AdvStdSample, config.FailedEnvError
	cfg.GRPO.DesignerAdvScale = "1"
	// The goldens train the pool's Designer samples at its last step (step 1).
	cfg.GRPO.DesignerStep, cfg.GRPO.FinalStep = config.DesignerPoolEnd, -1
	if mutate != nil {
		mutate(cfg)
	}
	laketest.NewRun(t, lk, "r", cfg)
	write := func(table string, step int64, rows any) {
		t.Helper()
		k := partition("r", table, step)
		var err error
		switch rows := rows.(type) {
		case []schemas.EpisodeRow:
			_, err = laketest.Commit(ctx, lk, k, rows, lake.WriteOptions{})
		case []schemas.TurnRow:
			_, err = laketest.Commit(ctx, lk, k, rows, lake.WriteOptions{})
		case []schemas.LLMCallRow:
			_, err = laketest.Commit(ctx, lk, k, rows, lake.WriteOptions{})
		case []schemas.EnvRow:
			_, err = laketest.Commit(ctx, lk, k, rows, lake.WriteOptions{})
		case []schemas.DesignerRewardRow:
			_, err = laketest.Commit(ctx, lk, k, rows, lake.WriteOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	byStep := goldenEpisodes(t)
	for step := int64(0); step < int64(len(byStep)); step++ { // in step order: call n's tokens depend on it
		episodes := byStep[step]
		var turns []schemas.TurnRow
		var calls []schemas.LLMCallRow
		for _, e := range episodes {
			for turn := int32(0); turn < 2; turn++ {
				id := fmt.Sprintf("c-%s-%d", e.EpisodeID, turn)
				turns = append(turns, schemas.TurnRow{Step: step, EpisodeID: e.EpisodeID, EnvID: e.EnvID, Turn: turn, CallID: id})
				n++
				calls = append(calls, tokenCall(id, schemas.RoleAgent, step, n))
			}
		}
		if step == 0 {
			for id := range goldenSkills {
				calls = append(calls, tokenCall("gen-"+id, schemas.RoleDesigner, 0, 1000))
			}
		}
		write(schemas.EpisodesSpec.Name, step, episodes)
		write(schemas.TurnsSpec.Name, step, turns)
		write(schemas.LLMCallsSpec.Name, step, calls)
	}
	var envs []schemas.EnvRow
	var rewards []schemas.DesignerRewardRow
	for _, id := range []string{"A", "B", "C", "D", "E", "F"} {
		envs = append(envs, schemas.EnvRow{EnvID: id, Skill: goldenSkills[id], Setting: schemas.SettingGames, Code: "x",
			CodeSHA256: strings.Repeat("0", 64), CallID: "gen-" + id})
		for _, v := range schemas.VariantValues() {
			reward := goldenFinalRewards[id]
			if v != schemas.VariantRegretAnchor {
				reward = -7 // other variants must not leak into the Designer's advantage
			}
			rewards = append(rewards, schemas.DesignerRewardRow{Step: 1, EnvID: id, Skill: goldenSkills[id], Variant: v, Final: true, Reward: reward})
			rewards = append(rewards, schemas.DesignerRewardRow{Step: 1, EnvID: id, Skill: goldenSkills[id], Variant: v, Final: false, Reward: -9})
		}
	}
	// An excluded env takes no part: G has a final row but is excluded.
	rewards = append(rewards, schemas.DesignerRewardRow{Step: 1, EnvID: "G", Skill: schemas.SkillMath, Variant: schemas.VariantRegretAnchor, Final: true, Excluded: "every episode ended in env_error"})
	write(schemas.EnvsSpec.Name, 0, envs)
	write(schemas.DesignerRewardsSpec.Name, 1, rewards)
	return lk, "r"
}

func close6(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

func TestAgentAdvantageByHand(t *testing.T) {
	cases := []struct {
		returns, want []float64
	}{
		// mean .25, n−1 std .5: .75/.500001, −.25/.500001
		{[]float64{1, 0, 0, 0}, []float64{1.4999970, -.4999990, -.4999990, -.4999990}},
		// mean .875, std .25
		{[]float64{1, 1, 1, .5}, []float64{.4999980, .4999980, .4999980, -1.4999940}},
		// mean .5, std √(1/3) = .5773503
		{[]float64{1, 1, 0, 0}, []float64{.8660239, .8660239, -.8660239, -.8660239}},
		{[]float64{.1, .1, .1}, []float64{0, 0, 0}}, // all equal (mean not exact in floating point)
		{[]float64{.7}, []float64{0}},               // G = 1
		{nil, []float64{}},
	}
	for _, c := range cases {
		got := ComputeGRPOOutcomeAdvantage(c.returns, AdvantageEpsilon)
		if len(got) != len(c.want) {
			t.Fatalf("%v: %v", c.returns, got)
		}
		for i := range got {
			if !close6(got[i], c.want[i]) {
				t.Errorf("advantage(%v)[%d] = %.7f, want %.7f", c.returns, i, got[i], c.want[i])
			}
		}
	}
}

func TestAgentAdvantagesSumToZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.IntN(32)
		returns := make([]float64, n)
		for i := range returns {
			switch rng.IntN(3) {
			case 0:
				returns[i] = float64(rng.IntN(2))
			default:
				returns[i] = rng.NormFloat64() * 3
			}
		}
		sum := 0.0
		for _, a := range ComputeGRPOOutcomeAdvantage(returns, AdvantageEpsilon) {
			sum += a
		}
		if math.Abs(sum) > 1e-9*float64(n) {
			t.Fatalf("advantages of %v sum to %g", returns, sum)
		}
	}
}

func TestDesignerAdvantageByHand(t *testing.T) {
	// math: A .7625, B .2125, F .475 (mean .483333) → .279167, −.270833, −.008333;
	// logic: C .6, D 0, E 0 (mean .2) → .4, −.2, −.2; a lone skill gets 0.
	got := ComputeDesignerAdvantage([]float64{.7625, .2125, .475, .6, 0, 0, .9},
		[]string{"m", "m", "m", "l", "l", "l", "solo"})
	want := []float64{.2791667, -.2708333, -.0083333, .4, -.2, -.2, 0}
	for i := range want {
		if !close6(got[i], want[i]) {
			t.Errorf("designer advantage %d = %.7f, want %.7f", i, got[i], want[i])
		}
	}
}

// recordingTrainer keeps what it was asked to train.
type recordingTrainer struct {
	calls int
	rows  []schemas.GRPOBatchRow
}

func (r *recordingTrainer) Train(_ context.Context, step int64, rows []schemas.GRPOBatchRow) ([]schemas.TrainMetricsRow, error) {
	r.calls++
	r.rows = rows
	return []schemas.TrainMetricsRow{{Step: step, Role: schemas.RoleAgent, Samples: int64(len(rows))}}, nil
}

func TestGoldenBatchesThroughTheLake(t *testing.T) {
	ctx := context.Background()
	lk, run := goldenLake(t, func(c *config.Config) { c.GRPO.GlobalBatch = 5 })
	// Step 0 is not a pool end: agent samples only.
	res0, err := stage.Within(ctx, testEnv(t, lk, run, shard.All), stage.GRPO, 0, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, nil) })
	if err != nil {
		t.Fatal(err)
	}
	// Unhinted, non-env-error episodes at step 0: A 4, B 4, C 2, E 1, F 2 = 13 episodes × 2 turns.
	if res0.AgentSamples != 26 || res0.DesignerSamples != 0 || res0.PoolEnd || res0.Batches != 6 {
		t.Fatalf("step 0: %+v", res0)
	}
	metrics, err := lake.ReadRows[schemas.TrainMetricsRow](ctx, lk, partition(run, schemas.TrainMetricsSpec.Name, 0))
	if err != nil || len(metrics) != 0 {
		t.Fatalf("trainer none commits an empty train_metrics partition: %v %v", metrics, err)
	}
	rows0, _ := lake.ReadRows[schemas.GRPOBatchRow](ctx, lk, partition(run, schemas.GRPOBatchesSpec.Name, 0))
	want0 := map[string]float64{ // episode id → advantage (hand-computed in TestAgentAdvantageByHand)
		"0-A-false-0": 1.4999970, "0-A-false-1": -.4999990, "0-B-false-3": -1.4999940, "0-B-false-0": .4999980,
		"0-C-false-0": 0, "0-E-false-0": 0,
		// F: the env_error episode (index 0) is dropped; [1, 0]: mean .5, std .7071068 → ±.7071058
		"0-F-false-1": .7071058, "0-F-false-2": -.7071058,
	}
	seen := map[string]int{}
	for _, r := range rows0 {
		if r.Role != schemas.RoleAgent || r.ISWeight != 1 || r.ISCap != 0 || r.Step != 0 {
			t.Errorf("agent row %+v", r)
		}
		if strings.Contains(r.EpisodeID, "true") || r.EpisodeID == "0-F-false-0" || strings.HasPrefix(r.EpisodeID, "0-D") {
			t.Errorf("sample from a hinted or env_error episode: %s", r.EpisodeID)
		}
		if w, ok := want0[r.EpisodeID]; ok {
			seen[r.EpisodeID]++
			if !close6(r.Advantage, w) {
				t.Errorf("%s: advantage %.7f, want %.7f", r.EpisodeID, r.Advantage, w)
			}
		}
		if turn := r.SampleID[len(r.SampleID)-1:]; r.SampleID != "c-"+r.EpisodeID+"-"+turn+"#"+turn {
			t.Errorf("sample id %s does not name its call and turn", r.SampleID)
		}
		if len(r.PromptIDs) != 3 || len(r.ResponseIDs) != 2 || r.OldLogprobs[1] != -.25 {
			t.Errorf("tokens not carried from llm_calls: %+v", r)
		}
	}
	for id := range want0 {
		if seen[id] != 2 {
			t.Errorf("%s: %d samples, want one per turn (2)", id, seen[id])
		}
	}
	checkBatches(t, rows0, 5)

	// Step 1 ends the pool: designer samples from the final regret_anchor rewards, with the TIS cap.
	trainer := &recordingTrainer{}
	res1, err := stage.Within(ctx, testEnv(t, lk, run, shard.All), stage.GRPO, 1, func(ctx context.Context, env *stage.Env, step int64) (Result, error) {
		return Run(ctx, env, step, trainer)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !res1.PoolEnd || res1.DesignerSamples != 6 || trainer.calls != 1 || len(trainer.rows) != res1.AgentSamples+6 {
		t.Fatalf("step 1: %+v, trainer saw %d rows in %d calls", res1, len(trainer.rows), trainer.calls)
	}
	wantDesigner := map[string]float64{"A": .2791667, "B": -.2708333, "F": -.0083333, "C": .4, "D": -.2, "E": -.2}
	rows1, _ := lake.ReadRows[schemas.GRPOBatchRow](ctx, lk, partition(run, schemas.GRPOBatchesSpec.Name, 1))
	for _, r := range rows1 {
		if r.Role != schemas.RoleDesigner {
			if r.EpisodeID == "1-A-false-0" && !close6(r.Advantage, .8660239) {
				t.Errorf("step 1 A: advantage %.7f, want .8660239", r.Advantage)
			}
			continue
		}
		if r.SampleID != "gen-"+r.EnvID || r.ISCap != 2.0 || r.ISWeight != 1 || r.EpisodeID != "" || !close6(r.Advantage, wantDesigner[r.EnvID]) {
			t.Errorf("designer row %s: %+v, want advantage %.7f", r.EnvID, r, wantDesigner[r.EnvID])
		}
	}
	checkBatches(t, rows1, 5)
	m1, _ := lake.ReadRows[schemas.TrainMetricsRow](ctx, lk, partition(run, schemas.TrainMetricsSpec.Name, 1))
	if len(m1) != 1 || m1[0].Samples != int64(len(rows1)) {
		t.Fatalf("train_metrics = %+v", m1)
	}
	// Done means done: a second run neither assembles nor trains.
	if again, err := stage.Execute(ctx, testEnv(t, lk, run, shard.All), Stage{Trainer: trainer}, 1); err != nil || !again.Skipped || trainer.calls != 1 {
		t.Fatalf("re-run: %+v %v (trainer calls %d)", again, err, trainer.calls)
	}
}

// checkBatches: at most size samples per batch, agent batches before designer ones, no batch mixes roles,
// batch numbers dense from 0.
func checkBatches(t *testing.T, rows []schemas.GRPOBatchRow, size int) {
	t.Helper()
	count := map[int32]int{}
	role := map[int32]schemas.Role{}
	maxAgent, minDesigner := int32(-1), int32(1<<30)
	for _, r := range rows {
		count[r.Batch]++
		if role[r.Batch] != "" && role[r.Batch] != r.Role {
			t.Errorf("batch %d mixes roles", r.Batch)
		}
		role[r.Batch] = r.Role
		if r.Role == schemas.RoleAgent {
			maxAgent = max(maxAgent, r.Batch)
		} else {
			minDesigner = min(minDesigner, r.Batch)
		}
	}
	for b := int32(0); b < int32(len(count)); b++ {
		if count[b] == 0 || count[b] > size {
			t.Errorf("batch %d has %d samples (global batch %d)", b, count[b], size)
		}
	}
	if maxAgent >= minDesigner {
		t.Errorf("designer batches must follow agent batches")
	}
}

func TestIncludeHintedAddsItsOwnGroups(t *testing.T) {
	lk, run := goldenLake(t, func(c *config.Config) { c.GRPO.IncludeHinted = true })
	asm, err := Assemble(context.Background(), lk, run, mustConfig(t, lk, run), 0)
	agent := asm.Agent
	if err != nil {
		t.Fatal(err)
	}
	// Hinted A at step 0: [1, 1, 0, 1]: mean .75, std .5 → .25/.500001 = .4999990 and −1.4999970.
	hinted := 0
	for _, r := range agent {
		if r.EpisodeID == "0-A-true-2" && !close6(r.Advantage, -1.4999970) {
			t.Errorf("hinted A[2]: %.7f, want −1.4999970", r.Advantage)
		}
		if strings.Contains(r.EpisodeID, "true") {
			hinted++
		}
	}
	// Hinted, non-env-error episodes at step 0: A 4, B 4, E 1, F 1 = 10 × 2 turns.
	if hinted != 20 {
		t.Fatalf("%d hinted samples, want 20", hinted)
	}
}

func mustConfig(t *testing.T, lk *lake.Lake, run string) *config.Config {
	cfg, err := lk.RunConfig(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestMissingTokensNamesTheFix(t *testing.T) {
	calls := []schemas.LLMCallRow{{Step: 3, CallID: "c1", Role: schemas.RoleAgent, Request: "{}", ResponseText: "<action>go</action>", CompletionTokens: 4, Model: "m"}}
	in := AgentInput{
		Episodes: []schemas.EpisodeRow{{Step: 3, EnvID: "e", EpisodeID: "ep", Return: 1, EndedBy: schemas.EndedDone}},
		Turns:    []schemas.TurnRow{{Step: 3, EpisodeID: "ep", Turn: 0, CallID: "c1"}},
		Calls:    calls,
	}
	_, err := AgentSamples(in)
	if !errors.Is(err, ErrMissingTokens) || !strings.Contains(err.Error(), "return_token_ids") || !strings.Contains(err.Error(), "c1") {
		t.Fatalf("want ErrMissingTokens naming the call and return_token_ids, got %v", err)
	}
	in.Calls[0].CompletionTokenIDs = []int32{1, 2, 3, 4}
	in.Calls[0].PromptTokenIDs = []int32{9}
	if _, err := AgentSamples(in); !errors.Is(err, ErrMissingTokens) || !strings.Contains(err.Error(), "logprobs") {
		t.Fatalf("logprobs missing: got %v", err)
	}
	in.Calls[0].CompletionLogprobs = []float32{-1, -1, -1, -1}
	in.Calls[0].PromptTokenIDs = nil
	if _, err := AgentSamples(in); !errors.Is(err, ErrMissingTokens) || !strings.Contains(err.Error(), "prompt token ids") {
		t.Fatalf("prompt ids missing: got %v", err)
	}
	in.Calls[0].PromptTokenIDs = []int32{9}
	rows, err := AgentSamples(in)
	if err != nil || len(rows) != 1 {
		t.Fatalf("complete call: %v %v", rows, err)
	}
	// A failed call sampled nothing: no sample, no error.
	in.Calls[0] = schemas.LLMCallRow{Step: 3, CallID: "c1", Role: schemas.RoleAgent, Request: "{}", Error: "timeout"}
	if rows, err := AgentSamples(in); err != nil || len(rows) != 0 {
		t.Fatalf("failed call: %v %v", rows, err)
	}
}

func TestBatchesAreDeterministicAndShuffled(t *testing.T) {
	var agent []schemas.GRPOBatchRow
	for i := 0; i < 50; i++ {
		agent = append(agent, schemas.GRPOBatchRow{SampleID: fmt.Sprint(i), Role: schemas.RoleAgent})
	}
	a := AssignBatches(agent, nil, 8, 1, 4)
	b := AssignBatches(agent, nil, 8, 1, 4)
	c := AssignBatches(agent, nil, 8, 1, 5)
	same, moved := true, false
	for i := range a {
		same = same && a[i].SampleID == b[i].SampleID && a[i].Batch == b[i].Batch
		moved = moved || a[i].SampleID != c[i].SampleID
	}
	if !same || !moved {
		t.Fatalf("same seed and step must give the same order (%v); another step another order (%v)", same, moved)
	}
	if a[49].Batch != 6 {
		t.Fatalf("50 samples in batches of 8: last batch %d, want 6", a[49].Batch)
	}
}

func TestShardsCommitTheSameBatches(t *testing.T) {
	ctx := context.Background()
	one, run := goldenLake(t, nil)
	three, _ := goldenLake(t, nil)
	for step := int64(0); step < 2; step++ {
		if _, err := stage.Within(ctx, testEnv(t, one, run, shard.All), stage.GRPO, step, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, nil) }); err != nil {
			t.Fatal(err)
		}
		trained := 0
		for i := 0; i < 3; i++ {
			res, err := stage.Within(ctx, testEnv(t, three, run, shard.Spec{Index: i, Count: 3}), stage.GRPO, step, func(ctx context.Context, env *stage.Env, step int64) (Result, error) { return Run(ctx, env, step, nil) })
			if err != nil {
				t.Fatal(err)
			}
			if res.Trained {
				trained++
			}
		}
		if trained != 1 {
			t.Fatalf("step %d: %d shards trained, want exactly the committing one", step, trained)
		}
		a, _ := lake.ReadRows[schemas.GRPOBatchRow](ctx, one, partition(run, schemas.GRPOBatchesSpec.Name, step))
		b, _ := lake.ReadRows[schemas.GRPOBatchRow](ctx, three, partition(run, schemas.GRPOBatchesSpec.Name, step))
		if fmt.Sprint(sortedRows(a)) != fmt.Sprint(sortedRows(b)) || len(a) == 0 {
			t.Fatalf("step %d: sharded batches differ (%d vs %d rows)", step, len(a), len(b))
		}
	}
}

func sortedRows(rows []schemas.GRPOBatchRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = fmt.Sprintf("%+v", r)
	}
	sort.Strings(out)
	return out
}

// testEnv returns the stage.Env of run for one shard.
func testEnv(t testing.TB, lk *lake.Lake, run string, spec shard.Spec) *stage.Env {
	t.Helper()
	env, err := stage.NewEnv(context.Background(), lk, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Shard = spec
	return env
}
