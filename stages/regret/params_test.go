package regret

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// The authors' settings of the Designer reward (regret.scale, regret.ramp, regret.delta,
// regret.ema_update), each checked on hand-computed values.

func TestRegretTermByHand(t *testing.T) {
	cases := []struct{ regret, scale, want float64 }{
		{.075, .15, .5}, {.15, .15, 1}, {.6, .15, 1}, // the cap: any Δ ≥ scale pays the whole term
		{0, .15, 0}, {-.2, .15, 0}, // a hint that hurt pays nothing
		{.3, 0, .3}, {1.7, 0, 1.7}, {-.3, 0, 0}, // scale 0: the plain max(0, Δ), not capped
	}
	for _, c := range cases {
		if got := RegretTerm(c.regret, c.scale); !near(got, c.want) {
			t.Errorf("RegretTerm(%v, %v) = %v, want %v", c.regret, c.scale, got, c.want)
		}
	}
}

func TestPlateauAnchorByHand(t *testing.T) {
	cases := []struct{ p, lo, hi, ramp, want float64 }{
		{.4, .4, .6, .25, 1}, {.5, .4, .6, .25, 1}, {.6, .4, .6, .25, 1}, // the band and its edges
		{.3, .4, .6, .25, .6}, {.2, .4, .6, .25, .2}, {.15, .4, .6, .25, 0}, {0, .4, .6, .25, 0}, // below
		{.7, .4, .6, .25, .6}, {.85, .4, .6, .25, 0}, {1, .4, .6, .25, 0}, // above: 0 at distance ramp
		{-.5, .4, .6, .25, 0}, {1.3, .4, .6, .25, 0}, // a mean outcome outside [0, 1]
		{.1, .2, .4, .2, .5}, {.5, .2, .4, .2, .5}, // the 4B second phase: band [0.2, 0.4], ramp 0.2
	}
	for _, c := range cases {
		if got := PlateauAnchor(c.p, c.lo, c.hi, c.ramp); !near(got, c.want) {
			t.Errorf("PlateauAnchor(%v, %v, %v, %v) = %v, want %v", c.p, c.lo, c.hi, c.ramp, got, c.want)
		}
	}
	// regret.ramp = 0 gives the linear anchor (DifficultyAnchor), which reaches 0 only at 0 and 1.
	p := testParams()
	if got := p.anchor(.2); !near(got, .5) {
		t.Errorf("ramp 0: anchor(.2) = %v, want DifficultyAnchor's .5", got)
	}
	p.Ramp = .25
	if got := p.anchor(.2); !near(got, .2) {
		t.Errorf("ramp .25: anchor(.2) = %v, want the plateau's .2", got)
	}
}

func TestNegativeBlendIsMasked(t *testing.T) {
	// With the weights the config accepts the blend is never negative: the mask does not fire.
	p := testParams()
	p.Scale, p.Ramp = .15, .25
	scores := []EnvScore{{EnvID: "a", Skill: schemas.SkillMath, NNoHint: 1, Regret: -1, Anchor: 0}}
	for _, r := range rewardRows(scores, p, nil, 0, true) {
		if r.Excluded != "" {
			t.Errorf("valid weights, Δ = −1, anchor 0: variant %s excluded %q", r.Variant, r.Excluded)
		}
	}
	// A blend that does go negative (a weight the config would reject) marks only the regret_anchor row.
	p.WeightAnchor = -1
	scores[0].Anchor = .5
	for _, r := range rewardRows(scores, p, nil, 0, true) {
		want := ""
		if r.Variant == schemas.VariantRegretAnchor {
			want = ExcludedNegativeBlend
			if !near(r.Reward, -.5) {
				t.Errorf("masked row keeps its blend: reward %v, want −.5", r.Reward)
			}
		}
		if r.Excluded != want {
			t.Errorf("negative blend: variant %s excluded %q, want %q", r.Variant, r.Excluded, want)
		}
	}
	if !NegativeBlend(-1e-12) || NegativeBlend(0) {
		t.Error("NegativeBlend: want true below 0 only")
	}
}

// poolEpisodes is a pool of two steps (refresh_every 2) whose hinted plays run at the pool's first step
// only (rollout.hinted_at = pool_start). Outcomes are returns (outcome.value = return):
//
//	X (math): step 0 unhinted [1, 0, 0, 0] (1 solved), hinted [1, 1, 0, 1]; step 1 unhinted [1, 1, .5, 0]
//	          (2 solved), no hinted play.
//	Y (math): step 0 unhinted two env errors (not counted), hinted [1]; step 1 unhinted [0, 1] (1 solved).
func poolEpisodes() map[int64][]schemas.EpisodeRow {
	out := map[int64][]schemas.EpisodeRow{}
	add := func(step int64, env string, hinted bool, ret float64, solved bool, ended schemas.EndedBy) {
		i := len(out[step])
		out[step] = append(out[step], schemas.EpisodeRow{Step: step, PoolStep: 0, EnvID: env, Skill: schemas.SkillMath,
			Hinted: hinted, Index: int32(i), EpisodeID: fmt.Sprintf("%d-%s-%d", step, env, i), Return: ret, Success: solved,
			EndedBy: ended, Turns: 1})
	}
	done, out4 := schemas.EndedDone, schemas.EndedMaxTurns
	for _, r := range []float64{1, 0, 0, 0} {
		add(0, "X", false, r, r == 1, map[bool]schemas.EndedBy{true: done, false: out4}[r == 1])
	}
	for _, r := range []float64{1, 1, 0, 1} {
		add(0, "X", true, r, r == 1, map[bool]schemas.EndedBy{true: done, false: out4}[r == 1])
	}
	add(0, "Y", false, 0, false, schemas.EndedEnvError)
	add(0, "Y", false, 0, false, schemas.EndedEnvError)
	add(0, "Y", true, 1, true, done)
	for _, r := range []float64{1, 1, .5, 0} {
		add(1, "X", false, r, r == 1, map[bool]schemas.EndedBy{true: done, false: out4}[r == 1])
	}
	add(1, "Y", false, 0, false, out4)
	add(1, "Y", false, 1, true, done)
	return out
}

func TestMatchedAndWindowDeltaByHand(t *testing.T) {
	eps := poolEpisodes()
	window := append(append([]schemas.EpisodeRow(nil), eps[0]...), eps[1]...)
	type want struct {
		regret, winRate, anchor, reward float64
		excluded                        string
	}
	for _, tc := range []struct {
		delta config.RegretDelta
		set   string
		rows  []schemas.EpisodeRow
		x, y  want
	}{
		// Window: X's baseline is every unhinted play, r̄ = 3.5/8 = .4375, Δ = .75 − .4375 = .3125; the anchor
		// reads the solve rate 3/8 = .375 → .375/.4 = .9375; reward .4·.3125 + .6·.9375 = .6875.
		// Y: Δ = 1 − .5 = .5, solve .5 → anchor 1, reward .8.
		{config.DeltaWindow, "pool window", window,
			want{.3125, .375, .9375, .6875, ""}, want{.5, .5, 1, .8, ""}},
		// Matched: X's baseline is step 0's unhinted plays, .25, Δ = .5; the anchor reads the window's mean
		// unhinted outcome .4375 → 1; reward .2 + .6 = .8. Y's hinted step has no counted unhinted play:
		// Δ undefined → 0; win rate .5 → anchor 1, reward .6.
		{config.DeltaMatched, "pool window", window,
			want{.5, .4375, 1, .8, ""}, want{0, .5, 1, .6, ""}},
		// One step with hinted plays: both baselines are the step's own (Y has no unhinted play).
		{config.DeltaWindow, "step 0", eps[0],
			want{.5, .25, .625, .575, ""}, want{excluded: ExcludedNoBaseline}},
		{config.DeltaMatched, "step 0", eps[0],
			want{.5, .25, .625, .575, ""}, want{excluded: ExcludedNoBaseline}},
		// A step without hinted plays: Δ is undefined, the regret 0. Window anchors on the solve rate .5,
		// matched on the mean outcome 2.5/4 = .625 (X) → (1 − .625)/.4 = .9375.
		{config.DeltaWindow, "step 1", eps[1],
			want{0, .5, 1, .6, ""}, want{0, .5, 1, .6, ""}},
		{config.DeltaMatched, "step 1", eps[1],
			want{0, .625, .9375, .5625, ""}, want{0, .5, 1, .6, ""}},
	} {
		p := testParams()
		p.Delta = tc.delta
		scores := ScoreEpisodes(tc.rows, p)
		rewards := Rewards(schemas.VariantRegretAnchor, scores, p, nil)
		for i, w := range []want{tc.x, tc.y} {
			s := scores[i]
			if s.Excluded != w.excluded {
				t.Errorf("%s %s env %s: excluded %q, want %q", tc.delta, tc.set, s.EnvID, s.Excluded, w.excluded)
				continue
			}
			if !near(s.Regret, w.regret) || !near(s.WinRate, w.winRate) || !near(s.Anchor, w.anchor) || !near(rewards[i], w.reward) {
				t.Errorf("%s %s env %s: regret %v win rate %v anchor %v reward %v; want %v %v %v %v", tc.delta, tc.set, s.EnvID,
					s.Regret, s.WinRate, s.Anchor, rewards[i], w.regret, w.winRate, w.anchor, w.reward)
			}
		}
	}
}

// poolRun writes poolEpisodes and the pool's envs to a new lake under cfg (refresh_every 2).
func poolRun(t *testing.T, mutate func(*config.Config)) (*lake.Lake, *config.Config) {
	t.Helper()
	lk := laketest.New(t)
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 2
	unscaledKeys(cfg)
	mutate(cfg)
	laketest.NewRun(t, lk, "r", cfg)
	for step, rows := range poolEpisodes() {
		laketest.Write(t, lk, key("r", schemas.EpisodesSpec.Name, step), rows)
	}
	var envs []schemas.EnvRow
	for i, id := range []string{"X", "Y"} {
		envs = append(envs, schemas.EnvRow{PoolStep: 0, Slot: int32(i), EnvID: id, Skill: schemas.SkillMath, Setting: schemas.SettingGames,
			Code: "class " + id + ": pass", Hint: "hint", CodeSHA256: strings.Repeat("0", 64), CallID: "gen-" + id})
	}
	laketest.Write(t, lk, key("r", schemas.EnvsSpec.Name, 0), envs)
	return lk, cfg
}

// runPool computes and commits steps 0 and 1 (as the stage does) and returns step 1's output.
func runPool(t *testing.T, lk *lake.Lake, cfg *config.Config) (step0, step1 *Output) {
	t.Helper()
	ctx := context.Background()
	p, err := ParamsFrom(cfg)
	if err != nil {
		t.Fatal(err)
	}
	outs := make([]*Output, 2)
	for step := int64(0); step < 2; step++ {
		out, err := Compute(ctx, lk, "r", cfg, p, step)
		if err != nil {
			t.Fatal(err)
		}
		tx := lk.Begin(lake.TxnSpec{Run: "r", Stage: string(stage.Regret), Step: step})
		if err := write(ctx, tx, key("r", schemas.EMAStateSpec.Name, step), out.EMA, lake.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		outs[step] = out
	}
	return outs[0], outs[1]
}

// The pool-end final rows find the hinted plays at the pool's first step: under matched X's final regret
// is .5 (step 0's gap), under window .3125.
func TestMatchedDeltaThroughTheLake(t *testing.T) {
	for delta, want := range map[config.RegretDelta]float64{config.DeltaMatched: .5, config.DeltaWindow: .3125} {
		lk, cfg := poolRun(t, func(c *config.Config) { c.Regret.Delta = delta })
		_, end := runPool(t, lk, cfg)
		found := false
		for _, r := range end.Rewards {
			if r.Final && r.EnvID == "X" && r.Variant == schemas.VariantRegretAnchor {
				found = true
				if !near(r.Regret, want) || r.NHint != 4 || r.NNoHint != 8 {
					t.Errorf("%s: final X regret %v (n %d/%d), want %v (n 8/4)", delta, r.Regret, r.NNoHint, r.NHint, want)
				}
			}
			if !r.Final && r.EnvID == "X" && r.Regret != 0 {
				t.Errorf("%s: step 1 has no hinted play, X's per-step regret %v, want 0", delta, r.Regret)
			}
		}
		if !found {
			t.Fatalf("%s: no final row for X", delta)
		}
		for _, m := range end.Memory {
			if m.EnvID == "X" && !near(m.Regret, want) {
				t.Errorf("%s: memory regret of X %v, want %v", delta, m.Regret, want)
			}
		}
	}
}

// Per step (γ fast .5, slow .1): step 0's math mean is X's .25 (Y has no baseline) → μ = .25; step 1's
// (.625 + .5)/2 = .5625 → μ_fast .5·.25 + .5·.5625 = .40625, μ_slow .9·.25 + .1·.5625 = .28125.
// Per pool: nothing moves at step 0 (no state yet: ema_lp takes the step's mean .25 as the baseline);
// at the pool end the window mean (.4375 + .5)/2 = .46875 initialises both, one round.
func TestEMAPerPoolAndPerStep(t *testing.T) {
	type state struct {
		fast, slow float64
		rounds     int64
	}
	for _, tc := range []struct {
		update     config.EMAUpdate
		after0     []state
		after1     state
		lpXAtStep0 float64
	}{
		{config.EMAPerStep, []state{{.25, .25, 1}}, state{.40625, .28125, 2}, 0},
		{config.EMAPerPool, nil, state{.46875, .46875, 1}, 0},
	} {
		lk, cfg := poolRun(t, func(c *config.Config) { c.Regret.EMAUpdate = tc.update })
		step0, step1 := runPool(t, lk, cfg)
		var got0 []state
		for _, r := range step0.EMA {
			got0 = append(got0, state{r.MuFast, r.MuSlow, r.Rounds})
		}
		if len(got0) != len(tc.after0) || (len(got0) == 1 && (!near(got0[0].fast, tc.after0[0].fast) || !near(got0[0].slow, tc.after0[0].slow) || got0[0].rounds != tc.after0[0].rounds)) {
			t.Errorf("%s: state after step 0 %v, want %v", tc.update, got0, tc.after0)
		}
		if len(step1.EMA) != 1 {
			t.Fatalf("%s: %d skills after step 1, want 1", tc.update, len(step1.EMA))
		}
		r := step1.EMA[0]
		if !near(r.MuFast, tc.after1.fast) || !near(r.MuSlow, tc.after1.slow) || r.Rounds != tc.after1.rounds || r.Step != 1 {
			t.Errorf("%s: state after step 1 fast %v slow %v rounds %d step %d; want %v %v %d 1", tc.update, r.MuFast, r.MuSlow, r.Rounds, r.Step,
				tc.after1.fast, tc.after1.slow, tc.after1.rounds)
		}
		for _, row := range step0.Rewards {
			// X is the only scored math env at step 0, so its centred ema_lp is 0 whichever the baseline.
			if row.EnvID == "X" && row.Variant == schemas.VariantEMALP && !near(row.Reward, tc.lpXAtStep0) {
				t.Errorf("%s: step 0 ema_lp of X %v, want %v", tc.update, row.Reward, tc.lpXAtStep0)
			}
		}
	}
	// The weight γ is on the new value, and a pool's update is one update: from μ = .5 with a pool mean
	// of .9, γ fast .98 and slow .85 give .02·.5 + .98·.9 = .892 and .15·.5 + .85·.9 = .84.
	p := testParams()
	p.GammaFast, p.GammaSlow = .98, .85
	prev := []schemas.EMAStateRow{{Skill: schemas.SkillMath, MuFast: .5, MuSlow: .5, Rounds: 3}}
	got := FoldEMA(prev, []EnvScore{{Skill: schemas.SkillMath, NNoHint: 4, RNoHint: .9}}, 7, p)
	if len(got) != 1 || !near(got[0].MuFast, .892) || !near(got[0].MuSlow, .84) || got[0].Rounds != 4 {
		t.Errorf("pool update: %+v, want μ_fast .892, μ_slow .84, rounds 4", got)
	}
	if carried := FoldEMA(prev, nil, 6, p); len(carried) != 1 || carried[0].MuSlow != .5 || carried[0].Rounds != 3 || carried[0].Step != 6 {
		t.Errorf("a step inside a pool carries the state: %+v", carried)
	}
	if b := BaselinesOrFirst(prev, []EnvScore{{Skill: schemas.SkillLogic, NNoHint: 1, RNoHint: .3}}); b[schemas.SkillMath] != .5 || !near(b[schemas.SkillLogic], .3) {
		t.Errorf("BaselinesOrFirst = %v, want math .5 (state), logic .3 (first mean)", b)
	}
}

func TestParamsFromReadsTheRewardKeys(t *testing.T) {
	cfg := config.Default()
	cfg.Regret.Scale, cfg.Regret.Ramp, cfg.Regret.Delta, cfg.Regret.EMAUpdate = .15, .25, config.DeltaMatched, config.EMAPerPool
	p, err := ParamsFrom(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Scale != .15 || p.Ramp != .25 || !p.matched() || !p.perPool() {
		t.Errorf("ParamsFrom: %+v", p)
	}
	cfg.Regret.Delta = "both"
	if _, err := ParamsFrom(cfg); err == nil || !strings.Contains(err.Error(), "regret.delta") {
		t.Errorf("unknown regret.delta: %v", err)
	}
	// The presets' values are the authors': matched Δ, EMA per pool, scale 0.15, ramp 0.25.
	if p, _ := ParamsFrom(config.Default()); !p.matched() || !p.perPool() || p.Scale != .15 || p.Ramp != .25 || p.GammaFast != .98 || p.GammaSlow != .85 {
		t.Errorf("the presets' reward parameters: %+v", p)
	}
}
