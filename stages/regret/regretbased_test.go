package regret

import (
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// TestWindowRegretByHand: max(0, r̄(e|h) − r̄_W(e)) on hand-computed pairs, the floor included.
func TestWindowRegretByHand(t *testing.T) {
	for _, tc := range []struct{ hinted, window, want float64 }{
		{1, 0.75, 0.25},
		{0.5, 0.5, 0},
		{0, 0.75, 0},
		{0.9, 0.1, 0.8},
	} {
		if got := WindowRegret(tc.hinted, tc.window); !near(got, tc.want) {
			t.Errorf("WindowRegret(%v, %v) = %v, want %v", tc.hinted, tc.window, got, tc.want)
		}
	}
}

// regretBasedWindow is a hand-made pool window (pool step 10, steps 10 and 11; hinted plays at 10 only):
//
//	up:    hinted 1, 1;  unhinted step 10: 0, 1;  step 11: 1, 1   → window r̄ 0.75, matched r̄ 0.5
//	down:  hinted 0, 0;  unhinted step 10: 1, 0;  step 11: 1, 1   → window r̄ 0.75, matched r̄ 0.5
//	hung:  hinted 1;     unhinted step 10: 0, 0;  step 11: 1 and one that timed out
func regretBasedWindow() []schemas.EpisodeRow {
	ep := func(env string, step int64, hinted bool, ret float64, ended schemas.EndedBy) schemas.EpisodeRow {
		return schemas.EpisodeRow{EnvID: env, Skill: schemas.SkillMath, Step: step, PoolStep: 10, Hinted: hinted, Return: ret,
			Success: ret > 0, EndedBy: ended}
	}
	d := schemas.EndedDone
	return []schemas.EpisodeRow{
		ep("up", 10, true, 1, d), ep("up", 10, true, 1, d), ep("up", 10, false, 0, d), ep("up", 10, false, 1, d),
		ep("up", 11, false, 1, d), ep("up", 11, false, 1, d),
		ep("down", 10, true, 0, d), ep("down", 10, true, 0, d), ep("down", 10, false, 1, d), ep("down", 10, false, 0, d),
		ep("down", 11, false, 1, d), ep("down", 11, false, 1, d),
		ep("hung", 10, true, 1, d), ep("hung", 10, false, 0, d), ep("hung", 10, false, 0, d),
		ep("hung", 11, false, 1, d), ep("hung", 11, false, 0, schemas.EndedTimeout),
	}
}

// TestRegretBasedOnAHandMadeWindow: the 4B tools preset trains regret_based, max(0, r̄(e|h) − window r̄),
// with -0.5 for an env whose step hung at its pool's first step (a later hang only drops the play); the
// matched Δ (the old regret variant) differs on the same window and is unclipped.
func TestRegretBasedOnAHandMadeWindow(t *testing.T) {
	cfg, err := config.Preset("qwen3-4b-tools")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParamsFrom(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.Deployed != schemas.VariantRegretBased || p.TimeoutPenalty != -0.5 {
		t.Fatalf("qwen3-4b-tools: variant %s penalty %v, want regret_based and -0.5", p.Deployed, p.TimeoutPenalty)
	}
	scores := ScoreEpisodes(regretBasedWindow(), p)
	got := map[string]float64{}
	for i, r := range Rewards(schemas.VariantRegretBased, scores, p, nil) {
		got[scores[i].EnvID] = r
	}
	want := map[string]float64{"up": 0.25, "down": 0}
	for env, w := range want {
		if !near(got[env], w) {
			t.Errorf("regret_based %s = %v, want %v", env, got[env], w)
		}
	}
	matched := map[string]float64{}
	for i, r := range Rewards(schemas.VariantRegret, scores, p, nil) {
		matched[scores[i].EnvID] = r
	}
	if !near(matched["up"], 0.5) || !near(matched["down"], -0.5) {
		t.Errorf("regret (matched, unclipped): up %v down %v, want 0.5 and -0.5", matched["up"], matched["down"])
	}
	// A hang at the pool's first step is penalised; hung's hang at step 11 is not: its timed-out play is
	// left out and the others give hinted 1 against window (0 + 0 + 1) / 3, so 1 − 1/3.
	if !near(got["hung"], 1-1.0/3) {
		t.Errorf("regret_based hung (timeout at a later step) = %v, want 2/3", got["hung"])
	}
	early := regretBasedWindow()
	early[len(early)-1].Step = 10
	for _, s := range ScoreEpisodes(early, p) {
		if r := Rewards(schemas.VariantRegretBased, []EnvScore{s}, p, nil)[0]; s.EnvID == "hung" && (!s.TimedOut || r != -0.5) {
			t.Errorf("regret_based hung (timeout at the pool's first step): timed_out %v reward %v, want -0.5", s.TimedOut, r)
		}
	}
	rows := rewardRows(scores, p, nil, 11, true)
	if len(rows) != len(scores)*len(schemas.VariantValues()) {
		t.Errorf("%d designer_rewards rows for %d envs, want every variant, regret_based included", len(rows), len(scores))
	}
}

// TestTimeoutPenaltyOnlyUnderRegretBased: every SPADE preset but 4B tools trains the blend and has no
// timeout penalty, so the env whose step hung is scored on its other plays (the timed-out one left out) as
// under the authors' blend; 4B tools trains regret_based and pays -0.5.
func TestTimeoutPenaltyOnlyUnderRegretBased(t *testing.T) {
	for _, name := range config.PresetNames() {
		cfg, err := config.Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := ParamsFrom(cfg)
		if err != nil {
			t.Fatal(err)
		}
		based := p.Deployed == schemas.VariantRegretBased
		if based != (name == "qwen3-4b-tools") || (p.TimeoutPenalty < 0) != based {
			t.Errorf("%s: variant %s, timeout penalty %v; want regret_based with -0.5 only for qwen3-4b-tools, else 0", name, p.Deployed, p.TimeoutPenalty)
		}
		var hung EnvScore
		for _, s := range ScoreEpisodes(regretBasedWindow(), p) {
			if s.EnvID == "hung" {
				hung = s
			}
		}
		if based {
			continue
		}
		// hung without the timed-out play: hinted 1; unhinted 0, 0 (step 10), 1 (step 11). Matched Δ = 1 − 0
		// → regret term clip(1/0.15) = 1; win rate r̄ = 1/3 → plateau 1 − (0.4 − 1/3)/0.25 = 11/15.
		wantBlend := 0.4*1 + 0.6*(1-(0.4-1.0/3)/0.25)
		blend := Rewards(p.Deployed, []EnvScore{hung}, p, nil)[0]
		if hung.TimedOut || hung.NNoHint != 3 || !near(blend, wantBlend) {
			t.Errorf("%s: hung env timed_out %v, %d unhinted plays counted, blend %v; want no penalty, 3 plays, %v", name, hung.TimedOut, hung.NNoHint, blend, wantBlend)
		}
	}
}
