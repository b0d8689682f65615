package regret

import (
	"fmt"
	"slices"
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
	// Scale is regret.scale: the regret term is clip(Δ/Scale, 0, 1) when > 0, max(0, Δ) when 0.
	Scale float64
	// Ramp is regret.ramp: the anchor is PlateauAnchor with this ramp when > 0, outcome.DifficultyAnchor when 0.
	Ramp float64
	// Delta is regret.delta: matched compares the hinted plays with the unhinted plays of their own step and
	// anchors on the mean unhinted outcome; window (or empty) compares with every unhinted play of the
	// scored episodes and anchors on the solve rate.
	Delta config.RegretDelta
	// EMAUpdate is regret.ema_update: pool moves the per-skill baselines once per pool, at its end, on the
	// window's means; step (or empty) at every step on the step's means.
	EMAUpdate config.EMAUpdate
	// TimeoutPenalty is regret.timeout_penalty: when < 0, the reward of every variant for an env one of
	// whose episodes timed out; 0 leaves those envs to Outcome's exclusions.
	TimeoutPenalty float64
}

// matched reports whether Δ is taken against the hinted plays' own step (regret.delta = matched).
func (p Params) matched() bool { return p.Delta == config.DeltaMatched }

// perPool reports whether the EMA baselines move once per pool (regret.ema_update = pool).
func (p Params) perPool() bool { return p.EMAUpdate == config.EMAPerPool }

// regretTerm is the regret term of the blend under regret.scale (RegretTerm).
func (p Params) regretTerm(regret float64) float64 { return RegretTerm(regret, p.Scale) }

// anchor is the difficulty anchor of a win rate under regret.ramp: PlateauAnchor when the ramp is set,
// else outcome.DifficultyAnchor.
func (p Params) anchor(winRate float64) float64 {
	if p.Ramp > 0 {
		return PlateauAnchor(winRate, p.BandLo, p.BandHi, p.Ramp)
	}
	return outcome.DifficultyAnchor(winRate, p.BandLo, p.BandHi)
}

// ParamsFrom reads and checks the reward settings of a run configuration; an error names the key.
func ParamsFrom(cfg *config.Config) (Params, error) {
	p := Params{
		WeightRegret: cfg.Regret.WeightRegret, WeightAnchor: cfg.Regret.WeightAnchor,
		BandLo: cfg.Regret.BandLo, BandHi: cfg.Regret.BandHi,
		GammaFast: cfg.Regret.EMAFast, GammaSlow: cfg.Regret.EMASlow,
		LearnLo: cfg.Metrics.BandLo, LearnHi: cfg.Metrics.BandHi,
		Scale: cfg.Regret.Scale, Ramp: cfg.Regret.Ramp, Delta: cfg.Regret.Delta, EMAUpdate: cfg.Regret.EMAUpdate,
		TimeoutPenalty: cfg.Regret.TimeoutPenalty,
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
	case p.Scale < 0 || p.Ramp < 0:
		return p, fmt.Errorf("config keys regret.scale, regret.ramp: must be >= 0, got %v, %v", p.Scale, p.Ramp)
	case p.Delta != "" && !slices.Contains(config.RegretDeltaValues(), p.Delta):
		return p, fmt.Errorf("config key regret.delta: must be one of %s, got %q", schemas.JoinValues(config.RegretDeltaValues(), ", "), p.Delta)
	case !(p.TimeoutPenalty >= -1 && p.TimeoutPenalty <= 0):
		return p, fmt.Errorf("config key regret.timeout_penalty: must be in [-1, 0], got %v", p.TimeoutPenalty)
	case p.EMAUpdate != "" && !slices.Contains(config.EMAUpdateValues(), p.EMAUpdate):
		return p, fmt.Errorf("config key regret.ema_update: must be one of %s, got %q", schemas.JoinValues(config.EMAUpdateValues(), ", "), p.EMAUpdate)
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
	// ExcludedNegativeBlend marks the regret_anchor row of an env whose blend is negative (NegativeBlend):
	// the row keeps its reward but GRPO leaves the env out of the Designer's skill-centering. Only that
	// variant's row carries it.
	ExcludedNegativeBlend = "negative Designer reward blend (masked)"
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
	// RNoHint is r̄(e), over every unhinted play scored; RHint is r̄(e|h) (= the baseline when Δ is
	// undefined): mean outcomes (outcome.value, the return by default).
	RNoHint, RHint float64
	// HintedMean is the mean outcome of every counted hinted play, 0 when none counted (the regret_based
	// variant's r̄(e|h); unlike RHint it never falls back to the baseline).
	HintedMean float64
	// RBaseline is the unhinted mean Δ compares with: RNoHint under regret.delta = window, the mean outcome
	// of the unhinted plays of the hinted plays' step(s) under matched.
	RBaseline float64
	// WinRate is the anchor's input: SolveRate under regret.delta = window, RNoHint (the mean unhinted
	// outcome of every scored step, the authors' win rate) under matched.
	WinRate float64
	// Regret is Δ = RHint − RBaseline, unclipped (0 when undefined); Anchor is the anchor of WinRate.
	Regret, Anchor float64
	// Excluded is empty for a scored env, else one of the Excluded* reasons (every number is then 0).
	Excluded string
	// TimedOut is set, under a regret.timeout_penalty below 0, when one of the env's episodes ended_by
	// timeout: every variant then rewards the env with the penalty, scored or excluded.
	TimedOut bool
}

// Scored reports whether the episodes measured the env (it is not excluded).
func (s EnvScore) Scored() bool { return s.Excluded == "" }

// Rewarded reports whether the env's reward trains the Designer: a scored env, or a timed-out one
// under regret.timeout_penalty.
func (s EnvScore) Rewarded() bool { return s.Scored() || s.TimedOut }

// timedOut reports whether one of the episodes ended because the program overran its step deadline; with
// poolStartOnly, only an episode of its pool's first step counts (under regret_based, the authors flag a
// hung env only while its pool's first step is played: a later hang drops its play and no more).
func timedOut(episodes []schemas.EpisodeRow, poolStartOnly bool) bool {
	for i := range episodes {
		if e := &episodes[i]; e.EndedBy == schemas.EndedTimeout && (!poolStartOnly || e.Step == e.PoolStep) {
			return true
		}
	}
	return false
}

// ScoreEnv scores one env from its episodes (any mix of steps and of hinted and unhinted plays). Which
// episodes count, the solve rates and the mean outcomes are outcome.Rules.Summarize's, under p.Outcome.
//
// Δ = r̄(e|h) − baseline. Under regret.delta = window the baseline is r̄(e), the mean outcome of every
// counted unhinted play, and the anchor reads the solve rate. Under matched the baseline is the mean outcome
// of the counted unhinted plays of the steps that have counted hinted plays (the pool's first step when
// rollout.hinted_at = pool_start), so the hint is compared with plays of the same policy; the anchor reads
// the win rate r̄(e), the mean unhinted outcome over every scored step (the pool's whole window for the
// final rows). For a single step's episodes both baselines are the step's own.
//
// Edge cases: episodes whose ended_by is excluded are dropped; if none is left the env is excluded
// (ExcludedEnvError), and if no unhinted one is left it is excluded too (ExcludedNoBaseline). With no
// hinted episode (a step other than the pool's first under hinted_at = pool_start), or under matched with
// no counted unhinted play at the hinted plays' step, Δ is undefined: r̄(e|h) is set to the baseline and
// the regret is 0. One episode is a valid group (solve rate 0 or 1). Under a regret.timeout_penalty below
// 0 an env with an episode ended_by timeout is marked TimedOut, whatever else it scores; when the deployed
// variant is regret_based only a timeout at the pool's first step marks it.
func ScoreEnv(envID string, episodes []schemas.EpisodeRow, p Params) EnvScore {
	sum := p.Outcome.Summarize(episodes)
	s := EnvScore{EnvID: envID, Skill: sum.Skill, PoolStep: sum.PoolStep, TimedOut: p.TimeoutPenalty < 0 &&
		timedOut(episodes, p.Deployed == schemas.VariantRegretBased)}
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
	s.RBaseline, s.WinRate = s.RNoHint, s.SolveRate
	if p.matched() {
		s.WinRate = s.RNoHint
	}
	s.RHint, s.HintSolveRate = s.RBaseline, s.SolveRate
	if sum.Hint.Counted > 0 {
		s.HintSolveRate, s.HintedMean = sum.Hint.SolveRate, sum.Hint.MeanOutcome
		baseline, defined := s.RNoHint, true
		if p.matched() {
			baseline, defined = matchedBaseline(episodes, p)
		}
		if defined {
			s.RBaseline, s.RHint = baseline, sum.Hint.MeanOutcome
		}
	}
	s.Regret = HintRegret(s.RHint, s.RBaseline)
	s.Anchor = p.anchor(s.WinRate)
	return s
}

// matchedBaseline returns the mean outcome of the counted unhinted episodes played at the steps where
// counted hinted episodes were played, and false when there are none.
func matchedBaseline(episodes []schemas.EpisodeRow, p Params) (float64, bool) {
	hintedSteps := map[int64]bool{}
	for i := range episodes {
		if e := &episodes[i]; e.Hinted && p.Outcome.Counts(e) {
			hintedSteps[e.Step] = true
		}
	}
	var same []schemas.EpisodeRow
	for _, e := range episodes {
		if !e.Hinted && hintedSteps[e.Step] {
			same = append(same, e)
		}
	}
	side := p.Outcome.Summarize(same).NoHint
	return side.MeanOutcome, side.Counted > 0
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
