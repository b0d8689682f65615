package regret

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/stages/stage"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/schemas"
)

// loadEpisodes reads testdata/regret/episodes.csv (step,env_id,skill,hinted,return,success,ended_by).
func loadEpisodes(t testing.TB) map[int64][]schemas.EpisodeRow {
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
		ret, err := strconv.ParseFloat(c[4], 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		group := fmt.Sprintf("%d-%s-%v", step, c[1], hinted)
		ep := schemas.EpisodeRow{Step: step, PoolStep: 0, EnvID: c[1], Skill: c[2], Hinted: hinted, Index: index[group],
			EpisodeID: fmt.Sprintf("%s-%d", group, index[group]), Return: ret, Success: c[5] == "true", EndedBy: schemas.EndedBy(c[6]), Turns: 1}
		index[group]++
		out[step] = append(out[step], ep)
	}
	return out
}

func testParams() Params {
	return Params{WeightRegret: 0.4, WeightAnchor: 0.6, BandLo: 0.4, BandHi: 0.6, GammaFast: 0.5, GammaSlow: 0.1,
		LearnLo: 0.2, LearnHi: 0.8, Deployed: schemas.VariantRegretAnchor, Outcome: outcome.Default()}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// golden is one env's hand-computed expectation (see testdata/regret/episodes.csv).
type golden struct {
	env                          string
	nNoHint, nHint               int
	solve, rNoHint, rHint        float64
	regret, anchor, regretAnchor float64
	emaLP                        float64
	excluded                     string
}

// Step 0 by hand (band [0.4, 0.6], weights 0.4/0.6):
//
//	A: solve 1/4, r̄ = .25, r̄h = .75, regret .5, anchor .25/.4 = .625, reward .4·.5 + .6·.625 = .575
//	B: solve 3/4, r̄ = 3.5/4 = .875, r̄h = 1, regret .125, anchor .25/.4 = .625, reward .05 + .375 = .425
//	C: no hinted episodes: solve .5, r̄ = r̄h = .5, regret 0, anchor 1, reward .6
//	D: every episode env_error: excluded
//	E: one episode each side: solve 0, r̄ = .2, r̄h = −.4, regret −.6 (clipped 0), anchor 0, reward 0
//	F: env errors dropped: no-hint [1, 0] → solve .5, r̄ .5; hinted [1] → r̄h 1; regret .5, anchor 1,
//	   reward .2 + .6 = .8
//
// EMA, first observation: μ(math) = mean(.25, .875, .5) = 1.625/3, μ(logic) = mean(.5, .2) = .35.
// ema_lp: ρ_A = |.25 − .541667| = .291667, ρ_B = .333333, ρ_F = .041667, mean .222222 →
// A .069444, B .111111, F −.180556; logic ρ_C = ρ_E = .15 → 0, 0.
var goldenStep0 = []golden{
	{"A", 4, 4, .25, .25, .75, .5, .625, .575, .0694444, ""},
	{"B", 4, 4, .75, .875, 1, .125, .625, .425, .1111111, ""},
	{"C", 2, 0, .5, .5, .5, 0, 1, .6, 0, ""},
	{"D", 0, 0, 0, 0, 0, 0, 0, 0, 0, ExcludedEnvError},
	{"E", 1, 1, 0, .2, -.4, -.6, 0, 0, 0, ""},
	{"F", 2, 1, .5, .5, 1, .5, 1, .8, -.1805556, ""},
}

// Final rows at step 1 (window = steps 0 and 1):
//
//	A: no-hint 3/8 solved, r̄ .375; hinted r̄h .875; regret .5; anchor .375/.4 = .9375; reward .2 + .5625 = .7625
//	B: solve 7/8, r̄ 7.5/8 = .9375, r̄h 1, regret .0625, anchor .125/.4 = .3125, reward .025 + .1875 = .2125
//	C: solve 2/4, r̄ = r̄h = .5, regret 0, anchor 1, reward .6
//	D: step 1's two no-hint plays count: solve 0, r̄ 0, no valid hinted play → regret 0, anchor 0, reward 0
//	E: no-hint [.2, .2] solve 0; hinted [−.4, .6] r̄h .1; regret −.1 → clipped 0; anchor 0; reward 0
//	F: no-hint [1, 0, 1, 1] solve .75, r̄ .75; hinted [1, 1, 1] r̄h 1; regret .25; anchor .625;
//	   reward .1 + .375 = .475
//
// EMA after step 1: step means math (.5 + 1 + 1)/3 = .833333, logic (.5 + 0 + .2)/3 = .233333;
// μ_slow(math) = .9·.541667 + .1·.833333 = .570833, μ_slow(logic) = .9·.35 + .1·.233333 = .338333.
// ema_lp final: math ρ = .195833, .366667, .179167 (mean .247222) → −.051389, .119444, −.068056;
// logic ρ = .161667, .338333, .138333 (mean .212778) → −.051111, .125556, −.074444.
var goldenFinal = []golden{
	{"A", 8, 8, .375, .375, .875, .5, .9375, .7625, -.0513889, ""},
	{"B", 8, 8, .875, .9375, 1, .0625, .3125, .2125, .1194444, ""},
	{"C", 4, 0, .5, .5, .5, 0, 1, .6, -.0511111, ""},
	{"D", 2, 0, 0, 0, 0, 0, 0, 0, .1255556, ""},
	{"E", 2, 2, 0, .2, .1, -.1, 0, 0, -.0744444, ""},
	{"F", 4, 3, .75, .75, 1, .25, .625, .475, -.0680556, ""},
}

func checkRows(t *testing.T, label string, rows []schemas.DesignerRewardRow, want []golden, final bool) {
	t.Helper()
	got := map[string]map[schemas.Variant]schemas.DesignerRewardRow{}
	for _, r := range rows {
		if r.Final != final {
			continue
		}
		if got[r.EnvID] == nil {
			got[r.EnvID] = map[schemas.Variant]schemas.DesignerRewardRow{}
		}
		got[r.EnvID][r.Variant] = r
	}
	if len(got) != len(want) {
		t.Fatalf("%s: %d envs, want %d", label, len(got), len(want))
	}
	for _, w := range want {
		byVariant := got[w.env]
		if len(byVariant) != len(schemas.WrittenVariants(schemas.VariantRegretAnchor)) {
			t.Fatalf("%s env %s: %d variants, want %d", label, w.env, len(byVariant), len(schemas.WrittenVariants(schemas.VariantRegretAnchor)))
		}
		r := byVariant[schemas.VariantRegretAnchor]
		if int(r.NNoHint) != w.nNoHint || int(r.NHint) != w.nHint || r.Excluded != w.excluded {
			t.Errorf("%s env %s: n=%d/%d excluded=%q, want %d/%d %q", label, w.env, r.NNoHint, r.NHint, r.Excluded, w.nNoHint, w.nHint, w.excluded)
		}
		checks := []struct {
			name      string
			got, want float64
		}{
			{"solve_rate", r.SolveRate, w.solve}, {"r_nohint", r.RNoHint, w.rNoHint}, {"r_hint", r.RHint, w.rHint},
			{"regret", r.Regret, w.regret}, {"anchor", r.Anchor, w.anchor},
			{"reward regret_anchor", r.Reward, w.regretAnchor},
			{"reward regret", byVariant[schemas.VariantRegret].Reward, map[bool]float64{true: 0, false: w.regret}[w.excluded != ""]},
			{"reward anchor", byVariant[schemas.VariantAnchor].Reward, w.anchor},
			{"reward ema_lp", byVariant[schemas.VariantEMALP].Reward, w.emaLP},
		}
		for _, c := range checks {
			if !near(c.got, c.want) {
				t.Errorf("%s env %s: %s = %.7f, want %.7f", label, w.env, c.name, c.got, c.want)
			}
		}
	}
}

// newRun creates a lake with a run whose pool is two steps long and writes the golden episodes and envs.
func newRun(t testing.TB, mutate func(*config.Config)) (*lake.Lake, string) {
	t.Helper()
	lk := laketest.New(t)
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 2
	unscaledKeys(cfg)
	cfg.Memory.WrittenAt = config.MemoryAtPoolEnd // the goldens' memory is the pool's window
	if mutate != nil {
		mutate(cfg)
	}
	laketest.NewRun(t, lk, "r", cfg)
	for step, rows := range loadEpisodes(t) {
		laketest.Write(t, lk, key("r", schemas.EpisodesSpec.Name, step), rows)
	}
	var envs []schemas.EnvRow
	for i, id := range []string{"A", "B", "C", "D", "E", "F"} {
		skill := schemas.SkillMath
		if id == "C" || id == "D" || id == "E" {
			skill = schemas.SkillLogic
		}
		envs = append(envs, schemas.EnvRow{PoolStep: 0, Slot: int32(i), EnvID: id, Skill: skill, Setting: schemas.SettingGames,
			Code: "class " + id + ": pass", Hint: "hint " + id, CodeSHA256: strings.Repeat("0", 64), CallID: "gen-" + id})
	}
	laketest.Write(t, lk, key("r", schemas.EnvsSpec.Name, 0), envs)
	return lk, "r"
}

func TestGoldenThroughTheLake(t *testing.T) {
	ctx := context.Background()
	lk, run := newRun(t, nil)
	res0, err := stage.Within(ctx, testEnv(t, lk, run, shard.All, false), stage.Regret, 0, Run)
	if err != nil {
		t.Fatal(err)
	}
	if res0.PoolEnd || res0.Envs != 6 || res0.Excluded != 1 {
		t.Fatalf("step 0: %+v", res0)
	}
	if _, err := lake.ReadRows[schemas.MemoryRow](ctx, lk, key(run, schemas.MemorySpec.Name, 0)); err == nil {
		t.Fatalf("step 0 is not a pool end but a memory snapshot was committed")
	}
	res1, err := stage.Within(ctx, testEnv(t, lk, run, shard.All, false), stage.Regret, 1, Run)
	if err != nil {
		t.Fatal(err)
	}
	if !res1.PoolEnd || res1.Memory != 6 {
		t.Fatalf("step 1: %+v", res1)
	}
	rows0, err := lake.ReadRows[schemas.DesignerRewardRow](ctx, lk, key(run, schemas.DesignerRewardsSpec.Name, 0))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "step 0", rows0, goldenStep0, false)
	rows1, err := lake.ReadRows[schemas.DesignerRewardRow](ctx, lk, key(run, schemas.DesignerRewardsSpec.Name, 1))
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, "final", rows1, goldenFinal, true)

	ema, err := lake.ReadRows[schemas.EMAStateRow](ctx, lk, key(run, schemas.EMAStateSpec.Name, 1))
	if err != nil {
		t.Fatal(err)
	}
	wantEMA := map[string][2]float64{ // fast, slow
		schemas.SkillMath:  {.5*1.625/3 + .5*2.5/3, .9*1.625/3 + .1*2.5/3},
		schemas.SkillLogic: {.5*.35 + .5*.7/3, .9*.35 + .1*.7/3},
	}
	for _, r := range ema {
		w := wantEMA[r.Skill]
		if !near(r.MuFast, w[0]) || !near(r.MuSlow, w[1]) || r.Rounds != 2 || r.LastObserved != 1 {
			t.Errorf("ema %s: %+v, want fast %.6f slow %.6f rounds 2", r.Skill, r, w[0], w[1])
		}
	}

	mem, err := lake.ReadRows[schemas.MemoryRow](ctx, lk, key(run, schemas.MemorySpec.Name, 1))
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := []struct{ env, label string }{
		{"A", schemas.LabelSeed}, {"B", schemas.LabelTooEasy}, {"C", schemas.LabelSeed},
		{"D", schemas.LabelTooHard}, {"E", schemas.LabelSeed}, {"F", schemas.LabelSeed},
	}
	if len(mem) != len(wantLabels) {
		t.Fatalf("memory has %d entries, want %d", len(mem), len(wantLabels))
	}
	for i, w := range wantLabels {
		m := mem[i]
		if m.EnvID != w.env || m.Label != w.label || int(m.Position) != i || m.Step != 1 || m.Code != "class "+w.env+": pass" {
			t.Errorf("memory[%d] = %s %s pos %d, want %s %s", i, m.EnvID, m.Label, m.Position, w.env, w.label)
		}
	}

	// Re-running is a no-op; forcing recomputes the same rows.
	again, err := stage.Execute(ctx, testEnv(t, lk, run, shard.All, false), Stage{}, 1)
	if err != nil || !again.Skipped {
		t.Fatalf("re-run: %+v %v", again, err)
	}
	if _, err := stage.Within(ctx, testEnv(t, lk, run, shard.All, true), stage.Regret, 1, Run); err != nil {
		t.Fatal(err)
	}
	forced, _ := lake.ReadRows[schemas.DesignerRewardRow](ctx, lk, key(run, schemas.DesignerRewardsSpec.Name, 1))
	checkRows(t, "forced final", forced, goldenFinal, true)
}

func TestEpisodesMissingNamesTheFix(t *testing.T) {
	lk, run := newRun(t, nil)
	_, err := stage.Execute(context.Background(), testEnv(t, lk, run, shard.All, false), Stage{}, 5)
	if want := "`spade --lake " + lk.URI() + " --run " + run + " rollout --step 5`"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("want an error naming %s, got %v", want, err)
	}
}

func TestUnknownVariantNamesTheKey(t *testing.T) {
	lk, run := newRun(t, func(c *config.Config) { c.Regret.Variant = "bogus" })
	// run.json is validated when it is read, before any stage runs.
	_, err := stage.NewEnv(context.Background(), lk, run, nil)
	if err == nil || !strings.Contains(err.Error(), "regret.variant") || !strings.Contains(err.Error(), "ema_lp") {
		t.Fatalf("want an error naming regret.variant and the choices, got %v", err)
	}
}

// testEnv returns the stage.Env of run for one shard.
func testEnv(t testing.TB, lk *lake.Lake, run string, spec shard.Spec, force bool) *stage.Env {
	t.Helper()
	env, err := stage.NewEnv(context.Background(), lk, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Shard, env.Force = spec, force
	return env
}

// unscaledKeys sets the reward keys the goldens were computed with, which are not the presets'
// (the authors' values): the unscaled max(0, Δ), the linear anchor, Δ over the window, the EMA moving
// every step with γ 0.5 and 0.1. The authors' values are tested in params_test.go.
func unscaledKeys(cfg *config.Config) {
	cfg.Regret.Scale, cfg.Regret.Ramp, cfg.Regret.Delta, cfg.Regret.EMAUpdate = 0, 0, config.DeltaWindow, config.EMAPerStep
	cfg.Regret.EMAFast, cfg.Regret.EMASlow = 0.5, 0.1
}
