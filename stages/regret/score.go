package regret

import (
	"fmt"
	"sort"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/schemas"
)

// Params are the reward settings of a run (docs/architecture.md, "Run configuration"), checked once.
type Params struct {
	// WeightRegret and WeightAnchor are regret.weight_regret and regret.weight_anchor (0.4, 0.6).
	WeightRegret, WeightAnchor float64
	// BandLo and BandHi are the anchor's flat top, regret.band_lo and regret.band_hi (0.4, 0.6).
	BandLo, BandHi float64
	// GammaFast and GammaSlow are the EMA weights of the ema_lp variant, regret.ema_fast and regret.ema_slow.
	GammaFast, GammaSlow float64
	// LearnLo and LearnHi are the learnable band, metrics.band_lo and metrics.band_hi (0.2, 0.8), which
	// decides the memory labels.
	LearnLo, LearnHi float64
	// Deployed is regret.variant, the variant GRPO trains the Designer on.
	Deployed schemas.Variant
	// Outcome decides which episodes count and what their outcome is (outcome.exclude_ended_by,
	// outcome.value): the same rules as the audits of sql/.
	Outcome outcome.Rules
}

// ParamsFrom reads and checks the reward settings of a run configuration; an error names the key.
func ParamsFrom(cfg *config.Config) (Params, error) {
	p := Params{
		WeightRegret: cfg.Regret.WeightRegret, WeightAnchor: cfg.Regret.WeightAnchor,
		BandLo: cfg.Regret.BandLo, BandHi: cfg.Regret.BandHi,
		GammaFast: cfg.Regret.EMAFast, GammaSlow: cfg.Regret.EMASlow,
		LearnLo: cfg.Metrics.BandLo, LearnHi: cfg.Metrics.BandHi,
	}
	v, err := schemas.ParseVariant(string(cfg.Regret.Variant))
	if err != nil {
		return p, fmt.Errorf("config key regret.variant: %w", err)
	}
	p.Deployed = v
	if p.Outcome, err = outcome.FromConfig(cfg); err != nil {
		return p, err
	}
	switch {
	case !(p.BandLo >= 0 && p.BandLo <= p.BandHi && p.BandHi <= 1):
		return p, fmt.Errorf("config keys regret.band_lo, regret.band_hi: need 0 <= band_lo <= band_hi <= 1, got %v, %v", p.BandLo, p.BandHi)
	case !(p.LearnLo >= 0 && p.LearnLo <= p.LearnHi && p.LearnHi <= 1):
		return p, fmt.Errorf("config keys metrics.band_lo, metrics.band_hi: need 0 <= band_lo <= band_hi <= 1, got %v, %v", p.LearnLo, p.LearnHi)
	case p.WeightRegret < 0 || p.WeightAnchor < 0:
		return p, fmt.Errorf("config keys regret.weight_regret, regret.weight_anchor: must be >= 0, got %v, %v", p.WeightRegret, p.WeightAnchor)
	case !(p.GammaFast > 0 && p.GammaFast <= 1):
		return p, fmt.Errorf("config key regret.ema_fast: must be in (0, 1], got %v", p.GammaFast)
	case !(p.GammaSlow > 0 && p.GammaSlow <= 1):
		return p, fmt.Errorf("config key regret.ema_slow: must be in (0, 1], got %v", p.GammaSlow)
	}
	return p, nil
}

// Why an env gets no reward (designer_rewards.excluded).
const (
	// ExcludedEnvError: every episode ended in env_error (or another ended_by of
	// outcome.exclude_ended_by, timeout by default), so nothing measures the Agent.
	ExcludedEnvError = "every episode ended in env_error"
	// ExcludedNoBaseline: no episode without the hint counts (env errors and the other excluded
	// ended_by are left out), so r̄(e) and the solve rate are undefined.
	ExcludedNoBaseline = "no episode without the hint (env errors excluded)"
)

// EnvScore is what the episodes of one env say about it: the inputs of every reward variant.
type EnvScore struct {
	EnvID    string
	Skill    string
	PoolStep int64
	// NNoHint and NHint count the episodes used; episodes whose ended_by is excluded
	// (outcome.exclude_ended_by: env_error and timeout by default) are not used (the env, not the
	// Agent, failed).
	NNoHint, NHint int
	// SolveRate is the no-hint success fraction; HintSolveRate the hinted one (= SolveRate when there are
	// no hinted episodes).
	SolveRate, HintSolveRate float64
	// RNoHint is r̄(e); RHint is r̄(e|h) (= r̄(e) when there are no hinted episodes): mean outcomes
	// (outcome.value, the return by default).
	RNoHint, RHint float64
	// Regret is r̄(e|h) − r̄(e), unclipped; Anchor is DifficultyAnchor(SolveRate).
	Regret, Anchor float64
	// Excluded is empty for a scored env, else one of the Excluded* reasons (every number is then 0).
	Excluded string
}

// Scored reports whether the env has a reward (is not excluded).
func (s EnvScore) Scored() bool { return s.Excluded == "" }

// ScoreEnv scores one env from its episodes (any mix of steps and of hinted and unhinted plays). Which
// episodes count, the solve rates and the mean outcomes are outcome.Rules.Summarize's, under p.Outcome.
//
// Edge cases: episodes whose ended_by is excluded are dropped; if none is left the env is excluded
// (ExcludedEnvError), and if no unhinted one is left it is excluded too (ExcludedNoBaseline). With no
// hinted episode, r̄(e|h) = r̄(e) and the regret is 0. One episode is a valid group (solve rate 0 or 1).
func ScoreEnv(envID string, episodes []schemas.EpisodeRow, p Params) EnvScore {
	sum := p.Outcome.Summarize(episodes)
	s := EnvScore{EnvID: envID, Skill: sum.Skill, PoolStep: sum.PoolStep}
	switch {
	case sum.NoHint.Counted+sum.Hint.Counted == 0:
		s.Excluded = ExcludedEnvError
		return s
	case sum.NoHint.Counted == 0:
		s.Excluded = ExcludedNoBaseline
		return s
	}
	s.NNoHint, s.NHint = sum.NoHint.Counted, sum.Hint.Counted
	s.SolveRate, s.RNoHint = sum.NoHint.SolveRate, sum.NoHint.MeanOutcome
	s.RHint, s.HintSolveRate = s.RNoHint, s.SolveRate
	if sum.Hint.Counted > 0 {
		s.RHint, s.HintSolveRate = sum.Hint.MeanOutcome, sum.Hint.SolveRate
	}
	s.Regret = HintRegret(s.RHint, s.RNoHint)
	s.Anchor = DifficultyAnchor(s.SolveRate, p.BandLo, p.BandHi)
	return s
}

// ScoreEpisodes groups episodes by env and scores each env, sorted by env_id.
func ScoreEpisodes(episodes []schemas.EpisodeRow, p Params) []EnvScore {
	byEnv := map[string][]schemas.EpisodeRow{}
	for _, e := range episodes {
		byEnv[e.EnvID] = append(byEnv[e.EnvID], e)
	}
	ids := make([]string, 0, len(byEnv))
	for id := range byEnv {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	scores := make([]EnvScore, len(ids))
	for i, id := range ids {
		scores[i] = ScoreEnv(id, byEnv[id], p)
	}
	return scores
}
