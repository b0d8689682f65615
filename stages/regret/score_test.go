package regret

import (
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/schemas"
)

// TestScoreEnvFollowsOutcomeRules checks that which episodes count and what r̄ is come from the run's
// outcome settings: timeouts are left out by default (the env overran its deadline, the Agent did not
// fail), counted when only env_error is excluded, and outcome.value = success makes r̄ the solve rate.
func TestScoreEnvFollowsOutcomeRules(t *testing.T) {
	ep := func(hinted bool, ret float64, success bool, ended schemas.EndedBy) schemas.EpisodeRow {
		return schemas.EpisodeRow{EnvID: "e", Skill: schemas.SkillMath, Hinted: hinted, Return: ret, Success: success, EndedBy: ended}
	}
	episodes := []schemas.EpisodeRow{
		ep(false, 1, true, schemas.EndedDone),
		ep(false, 0.5, false, schemas.EndedMaxTurns),
		ep(false, 0, false, schemas.EndedTimeout),
		ep(false, 0, false, schemas.EndedEnvError),
		ep(true, 2, true, schemas.EndedDone),
		ep(true, 0, false, schemas.EndedTimeout),
	}
	p := testParams()
	for _, tc := range []struct {
		exclude, value        string
		nNoHint, nHint        int
		solve, rNoHint, rHint float64
	}{
		{config.DefaultExcludeEndedBy, "return", 2, 1, 0.5, 0.75, 2},
		{"env_error", "return", 3, 2, 1.0 / 3, 0.5, 1},
		{config.DefaultExcludeEndedBy, "success", 2, 1, 0.5, 0.5, 1},
	} {
		cfg := config.Default()
		cfg.Outcome.ExcludeEndedBy, cfg.Outcome.Value = tc.exclude, config.OutcomeValue(tc.value)
		rules, err := outcome.FromConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		p.Outcome = rules
		s := ScoreEnv("e", episodes, p)
		if s.NNoHint != tc.nNoHint || s.NHint != tc.nHint || !near(s.SolveRate, tc.solve) || !near(s.RNoHint, tc.rNoHint) ||
			!near(s.RHint, tc.rHint) || !near(s.Regret, tc.rHint-tc.rNoHint) {
			t.Errorf("exclude %q value %s: n %d/%d solve %v r̄ %v r̄h %v regret %v; want n %d/%d solve %v r̄ %v r̄h %v",
				tc.exclude, tc.value, s.NNoHint, s.NHint, s.SolveRate, s.RNoHint, s.RHint, s.Regret,
				tc.nNoHint, tc.nHint, tc.solve, tc.rNoHint, tc.rHint)
		}
	}
	p.Outcome = outcome.Default()
	if s := ScoreEnv("e", episodes[2:4], p); s.Excluded != ExcludedEnvError {
		t.Errorf("an env whose episodes all timed out or errored: excluded %q, want %q", s.Excluded, ExcludedEnvError)
	}
}

// TestTimeoutPenaltyRewardsTimedOutEnvs: under regret.timeout_penalty an env with an episode that timed
// out gets the penalty in every variant and its rows train (no exclusion), whether its other episodes
// score it or not; an env without a timeout keeps its reward; with the penalty 0 the timed-out envs keep
// the old rules (scored on the rest, or excluded).
func TestTimeoutPenaltyRewardsTimedOutEnvs(t *testing.T) {
	ep := func(env string, hinted bool, ret float64, ended schemas.EndedBy) schemas.EpisodeRow {
		return schemas.EpisodeRow{EnvID: env, Skill: schemas.SkillMath, Hinted: hinted, Return: ret, Success: ret > 0, EndedBy: ended}
	}
	byEnv := map[string][]schemas.EpisodeRow{
		"partly": {ep("partly", false, 1, schemas.EndedDone), ep("partly", false, 0, schemas.EndedMaxTurns), ep("partly", false, 0, schemas.EndedTimeout), ep("partly", true, 1, schemas.EndedDone)},
		"all":    {ep("all", false, 0, schemas.EndedTimeout), ep("all", true, 0, schemas.EndedTimeout)},
		"clean":  {ep("clean", false, 1, schemas.EndedDone), ep("clean", false, 0, schemas.EndedMaxTurns), ep("clean", true, 1, schemas.EndedDone)},
	}
	envs := []string{"partly", "all", "clean"}
	for _, penalty := range []float64{-0.5, 0} {
		p := testParams()
		p.TimeoutPenalty = penalty
		var scores []EnvScore
		for _, e := range envs {
			scores = append(scores, ScoreEnv(e, byEnv[e], p))
		}
		rows := rewardRows(scores, p, map[string]float64{schemas.SkillMath: 0.5}, 3, false)
		if len(rows) != len(envs)*len(schemas.WrittenVariants(p.Deployed)) {
			t.Fatalf("penalty %v: %d rows", penalty, len(rows))
		}
		clean := Rewards(schemas.VariantRegretAnchor, scores[2:], p, nil)[0]
		for _, r := range rows {
			timed := r.EnvID != "clean"
			switch {
			case penalty < 0 && timed:
				if r.Reward != penalty || r.Excluded != "" {
					t.Errorf("penalty %v env %s %s: reward %v excluded %q, want %v and no exclusion", penalty, r.EnvID, r.Variant, r.Reward, r.Excluded, penalty)
				}
			case r.EnvID == "all":
				if r.Reward != 0 || r.Excluded != ExcludedEnvError {
					t.Errorf("penalty 0 env all %s: reward %v excluded %q, want 0 and %q", r.Variant, r.Reward, r.Excluded, ExcludedEnvError)
				}
			case r.EnvID == "clean" && r.Variant == schemas.VariantRegretAnchor:
				if !near(r.Reward, clean) || r.Reward <= 0 || r.Excluded != "" {
					t.Errorf("penalty %v env clean: reward %v excluded %q, want %v", penalty, r.Reward, r.Excluded, clean)
				}
			case r.EnvID == "partly" && r.Variant == schemas.VariantRegretAnchor:
				if r.Reward <= 0 || r.Excluded != "" {
					t.Errorf("penalty 0 env partly: reward %v excluded %q, want its scored reward", r.Reward, r.Excluded)
				}
			}
		}
	}
	cfg := config.Default()
	cfg.Regret.TimeoutPenalty = 0.5
	if _, err := ParamsFrom(cfg); err == nil || !strings.Contains(err.Error(), "regret.timeout_penalty") {
		t.Errorf("timeout_penalty 0.5: error %v, want one naming regret.timeout_penalty", err)
	}
}
