// Package outcome is the one definition of an episode's outcome, of an env's solve rate and of the
// difficulty anchor on it (DifficultyAnchor), shared by the Designer's reward (stages/regret), synthetic
// runs and the Go side of the audits. Its SQL twin is sql/episode_outcomes.sql
// and sql/env_outcomes.sql, driven by the same run settings (outcome.exclude_ended_by, outcome.value)
// through DuckDB variables; a test in internal/analytics checks that both agree row for row.
//
// An episode counts in its env's rates unless its ended_by is excluded (by default env_error and
// timeout: the env failed, not the Agent). Over the counted episodes of one side (with or without the
// hint), the solve rate is the success fraction and the mean outcome r̄ is the mean of the episodes'
// outcomes (their return by default, or their success as 0/1).
package outcome

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// Rules are the outcome settings of a run.
type Rules struct {
	// Exclude lists the ended_by values whose episodes do not count (outcome.exclude_ended_by).
	Exclude []schemas.EndedBy
	// Value is what an episode's outcome is (outcome.value); empty means config.OutcomeReturn.
	Value config.OutcomeValue
}

// Default returns the rules of a run that does not set the outcome keys.
func Default() Rules {
	r, _ := FromConfig(config.Default())
	return r
}

// FromConfig reads the outcome settings of a run; an error names the key.
func FromConfig(cfg *config.Config) (Rules, error) {
	exclude, err := cfg.Outcome.Excluded()
	if err != nil {
		return Rules{}, err
	}
	if !slices.Contains(config.OutcomeValueValues(), cfg.Outcome.Value) {
		return Rules{}, fmt.Errorf("config: key \"outcome.value\" must be one of %s; got %q",
			schemas.JoinValues(config.OutcomeValueValues(), ", "), cfg.Outcome.Value)
	}
	return Rules{Exclude: exclude, Value: cfg.Outcome.Value}, nil
}

// Counts reports whether an episode counts in its env's rates: its ended_by is not excluded.
func (r Rules) Counts(e *schemas.EpisodeRow) bool {
	return !slices.Contains(r.Exclude, e.EndedBy)
}

// Of returns the episode's outcome o: its return, or 1 if it succeeded and 0 otherwise under
// outcome.value = success.
func (r Rules) Of(e *schemas.EpisodeRow) float64 {
	if r.Value == config.OutcomeSuccess {
		if e.Success {
			return 1
		}
		return 0
	}
	return e.Return
}

// Side is what the episodes of one side (with or without the hint) say about an env.
type Side struct {
	// Episodes counts every episode of the side; Counted those whose ended_by is not excluded.
	Episodes, Counted int
	// Solved counts the counted episodes that succeeded.
	Solved int
	// SolveRate is Solved / Counted; MeanOutcome the mean outcome r̄ and MeanReturn the mean return of the
	// counted episodes. All three are 0 when Counted is 0 (check Counted first; SQL gives NULL).
	SolveRate, MeanOutcome, MeanReturn float64
}

// Summary is what the episodes of one env (at one step, or over a pool's window) say about it.
type Summary struct {
	// EnvID, Skill and PoolStep come from the first episode.
	EnvID, Skill string
	PoolStep     int64
	// NoHint and Hint are the two sides.
	NoHint, Hint Side
	// Excluded counts the episodes (both sides) whose ended_by is excluded: the env's failures.
	Excluded int
}

// Summarize applies the rules to the episodes of one env (any mix of steps and sides).
//
// Edge cases: no episodes gives a zero Summary; a side with no counted episode has rates 0 and
// Counted 0 (callers decide: regret excludes an env with no counted unhinted episode).
func (r Rules) Summarize(episodes []schemas.EpisodeRow) Summary {
	var s Summary
	if len(episodes) > 0 {
		s.EnvID, s.Skill, s.PoolStep = episodes[0].EnvID, episodes[0].Skill, episodes[0].PoolStep
	}
	var outcomes, returns [2][]float64
	for i := range episodes {
		e := &episodes[i]
		side := &s.NoHint
		k := 0
		if e.Hinted {
			side, k = &s.Hint, 1
		}
		side.Episodes++
		if !r.Counts(e) {
			s.Excluded++
			continue
		}
		side.Counted++
		if e.Success {
			side.Solved++
		}
		outcomes[k] = append(outcomes[k], r.Of(e))
		returns[k] = append(returns[k], e.Return)
	}
	for k, side := range []*Side{&s.NoHint, &s.Hint} {
		if side.Counted > 0 {
			side.SolveRate = float64(side.Solved) / float64(side.Counted)
			side.MeanOutcome = mean(outcomes[k])
			side.MeanReturn = mean(returns[k])
		}
	}
	return s
}

// StepSummary is one row of sql/env_outcomes.sql: the Summary of one env's episodes at one step.
type StepSummary struct {
	Step int64
	Summary
}

// ByStepEnv summarizes episodes per (step, env), sorted by step then env_id: the Go side of
// sql/env_outcomes.sql.
func (r Rules) ByStepEnv(episodes []schemas.EpisodeRow) []StepSummary {
	type key struct {
		step int64
		env  string
	}
	groups := map[key][]schemas.EpisodeRow{}
	for _, e := range episodes {
		k := key{e.Step, e.EnvID}
		groups[k] = append(groups[k], e)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].step != keys[j].step {
			return keys[i].step < keys[j].step
		}
		return keys[i].env < keys[j].env
	})
	out := make([]StepSummary, len(keys))
	for i, k := range keys {
		out[i] = StepSummary{Step: k.step, Summary: r.Summarize(groups[k])}
	}
	return out
}

// mean returns (1/n) Σ x_i, summed in order (as DuckDB's avg over the same rows, to the last bits in the
// test's tolerance).
func mean(xs []float64) float64 {
	sum := 0.0
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// DifficultyAnchor returns the flat-top anchor of solve rate p on the band [lo, hi] (SPADE §2.2;
// docs/architecture.md, "Formulas"):
//
//	anchor(p) = p / lo             for p < lo
//	          = 1                  for lo ≤ p ≤ hi
//	          = (1 − p) / (1 − hi) for p > hi
//
// so it is 0 at p = 0 and p = 1 and linear in between. Edge cases: lo = 0 has no rising edge and hi = 1
// no falling one (the band reaches the end); p is clamped to [0, 1]; the result is always in [0, 1].
func DifficultyAnchor(p, lo, hi float64) float64 {
	p = math.Min(1, math.Max(0, p))
	switch {
	case p < lo:
		return p / lo
	case p > hi:
		return (1 - p) / (1 - hi)
	}
	return 1
}
