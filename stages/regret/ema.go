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

// FoldEMA returns the per-skill state after step: every skill played at step is updated with EMAUpdate
// (the first observation initialises both averages); the others are carried forward unchanged. The rows
// are sorted by skill and all carry Step = step.
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
