package regret

import "math"

// One function per formula (STYLE habit 5). Inputs are plain numbers so each can be checked by hand.

// The solve rate and the mean outcome r̄ are internal/outcome's (Rules.Summarize): one definition for the
// reward and the audits.

// HintRegret returns r_D(e) = r̄(e|h) − r̄(e), the hint regret (SPADE §2.3, eq. r_D). It is negative when
// the hint hurt. Edge case: an env with no hinted episodes is given r̄(e|h) = r̄(e) by the caller, so its
// regret is 0 (no evidence of a learnable gap is no reward).
func HintRegret(hintedMean, noHintMean float64) float64 {
	return hintedMean - noHintMean
}

// ClippedRegret returns max(0, r̄(e|h) − r̄(e)) (SPADE §2.2: the deployed reward uses the regret clipped
// at zero, so a misleading hint never pays the Designer a negative amount).
func ClippedRegret(regret float64) float64 {
	return math.Max(0, regret)
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

// DesignerReward returns w_regret · max(0, r̄(e|h) − r̄(e)) + w_anchor · anchor(p), the deployed Designer
// reward (SPADE §2.2; 0.4 and 0.6 by default, regret.weight_regret and regret.weight_anchor). It takes the
// clipped regret and the anchor already computed. With non-negative weights it is non-decreasing in the
// regret at a fixed solve rate.
func DesignerReward(clippedRegret, anchor, weightRegret, weightAnchor float64) float64 {
	return weightRegret*clippedRegret + weightAnchor*anchor
}

// EMAUpdate returns μ_t = (1 − γ) μ_{t−1} + γ r̄_t(s), one step of the per-skill exponential moving
// average of the mean no-hint return (SPADE §3.5). Edge case: the first observation of a skill (first =
// true) initialises μ_t = r̄_t(s), so the average carries no bias towards an arbitrary starting value.
func EMAUpdate(previous, observed, gamma float64, first bool) float64 {
	if first {
		return observed
	}
	return (1-gamma)*previous + gamma*observed
}

// LearningPotential returns ρ(e) = |r̄(e) − μ_slow(s)|, the env's distance from its skill's slow baseline
// (SPADE §3.5). It rewards envs far above and far below the baseline alike, which is the variant's
// known weakness.
func LearningPotential(noHintMean, slowBaseline float64) float64 {
	return math.Abs(noHintMean - slowBaseline)
}

// CenterBySkill returns x_i − mean{x_j : skill_j = skill_i}, each value minus the mean of its skill's
// values (SPADE §3.5: r_D^LP(e) = ρ(e) − (1/|E_s|) Σ_{e'∈E_s} ρ(e')). Entries with include[i] false are
// left out of the means and get 0. Edge case: a skill with one included env gives it 0.
func CenterBySkill(values []float64, skills []string, include []bool) []float64 {
	sum := map[string]float64{}
	count := map[string]int{}
	for i, v := range values {
		if include[i] {
			sum[skills[i]] += v
			count[skills[i]]++
		}
	}
	out := make([]float64, len(values))
	for i, v := range values {
		if include[i] {
			out[i] = v - sum[skills[i]]/float64(count[skills[i]])
		}
	}
	return out
}
