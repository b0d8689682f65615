package regret

import (
	"sort"

	"github.com/spadekit/spade/schemas"
)

// SkillMeans returns r̄_t(s) for every skill of a step: the mean over the skill's scored envs of r̄(e)
// (each env weighs the same, whatever its episode count). Skills with no scored env are absent.
func SkillMeans(scores []EnvScore) map[string]float64 {
	sum := map[string]float64{}
	count := map[string]int{}
	for _, s := range scores {
		if s.Scored() {
			sum[s.Skill] += s.RNoHint
			count[s.Skill]++
		}
	}
	means := make(map[string]float64, len(sum))
	for skill, total := range sum {
		means[skill] = total / float64(count[skill])
	}
	return means
}

// FoldEMA returns the per-skill state after step: every skill of scores is updated with EMAUpdate on its
// mean (SkillMeans; the first observation initialises both averages); the others are carried forward
// unchanged. scores are the step's (regret.ema_update = step) or, at a pool's end, the pool window's
// (pool); nil scores carry the whole state forward (a step inside a pool under pool). Rounds then counts
// the updates (steps or pools). The rows are sorted by skill and all carry Step = step.
func FoldEMA(previous []schemas.EMAStateRow, scores []EnvScore, step int64, p Params) []schemas.EMAStateRow {
	state := map[string]schemas.EMAStateRow{}
	for _, r := range previous {
		state[r.Skill] = r
	}
	for skill, mean := range SkillMeans(scores) {
		r, seen := state[skill]
		r.Skill = skill
		r.MuFast = EMAUpdate(r.MuFast, mean, p.GammaFast, !seen)
		r.MuSlow = EMAUpdate(r.MuSlow, mean, p.GammaSlow, !seen)
		r.Rounds++
		r.LastObserved, r.LastMean = step, mean
		state[skill] = r
	}
	rows := make([]schemas.EMAStateRow, 0, len(state))
	for _, r := range state {
		r.Step, r.GammaFast, r.GammaSlow = step, p.GammaFast, p.GammaSlow
		rows = append(rows, r)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Skill < rows[j].Skill })
	return rows
}

// SlowBaselines maps each skill of the state to μ_slow(s).
func SlowBaselines(state []schemas.EMAStateRow) map[string]float64 {
	out := make(map[string]float64, len(state))
	for _, r := range state {
		out[r.Skill] = r.MuSlow
	}
	return out
}

// BaselinesOrFirst maps each skill to μ_slow(s) of the state and, for a skill of scores the state has not
// seen yet (before its first pool end under regret.ema_update = pool), to the skill's mean over scores:
// the value its first update will initialise μ_slow to, so the ema_lp variant has a baseline from the
// first step on.
func BaselinesOrFirst(state []schemas.EMAStateRow, scores []EnvScore) map[string]float64 {
	out := SlowBaselines(state)
	for skill, mean := range SkillMeans(scores) {
		if _, seen := out[skill]; !seen {
			out[skill] = mean
		}
	}
	return out
}
