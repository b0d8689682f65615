package regret

import (
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
