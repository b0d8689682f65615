package regret

import "math"

// One function per formula, each with its equation and edge cases, so the reward can be checked line by
// line against the paper. Inputs are plain numbers so each can be checked by hand.

// The solve rate and the mean outcome r̄ are internal/outcome's (Rules.Summarize): one definition for the
// reward and the audits.

// HintRegret returns r_D(e) = Δ = r̄(e|h) − r̄(e), the hint regret (SPADE §2.3, eq. r_D). It is negative
// when the hint hurt. noHintMean is the baseline the hinted plays are compared with: every unhinted play
// of the scored episodes (regret.delta = window), or only those of the hinted plays' step (matched; see
// ScoreEnv). Edge case: an env with no hinted episodes (or, under matched, no unhinted play at their step)
// has no Δ; the caller gives it r̄(e|h) = baseline, so its regret is 0 (no evidence of a learnable gap is
// no reward).
func HintRegret(hintedMean, noHintMean float64) float64 {
	return hintedMean - noHintMean
}

// ClippedRegret returns max(0, r̄(e|h) − r̄(e)) (SPADE §2.2: the deployed reward uses the regret clipped
// at zero, so a misleading hint never pays the Designer a negative amount).
func ClippedRegret(regret float64) float64 {
	return math.Max(0, regret)
}

// WindowRegret returns r_D(e) = max(0, r̄(e|h) − r̄_W(e)), the floored window regret of the regret_based
// reward: hintedMean is the mean outcome of the env's hinted plays (0 when it has none, so an env without
// a hint earns nothing for one) and windowMean the mean outcome of every unhinted play of the pool's window
// (so the baseline includes the plays made after the Agent trained on the env). A negative gap is floored,
// not dropped: the env stays in its skill's centering with reward 0.
func WindowRegret(hintedMean, windowMean float64) float64 {
	return math.Max(0, hintedMean-windowMean)
}

// RegretTerm returns the regret term of the Designer reward: clip(Δ / scale, 0, 1) when scale > 0 (the
// authors' launch scripts: scale regret.scale = 0.15, so a gap of 0.15 already pays the whole term), and
// max(0, Δ) (ClippedRegret) when scale is 0. Edge cases: a negative Δ gives 0 either way; with scale > 0
// every Δ ≥ scale gives 1 (the cap); scale < 0 is rejected by the config and treated as 0 here.
func RegretTerm(regret, scale float64) float64 {
	if scale <= 0 {
		return ClippedRegret(regret)
	}
	return math.Min(1, math.Max(0, regret/scale))
}

// PlateauAnchor returns the plateau difficulty anchor of the win rate p on the band [lo, hi] with ramp
// width ramp (the authors' plateau reward; regret.ramp = 0.25 in their scripts):
//
//	anchor(p) = 1                            for lo ≤ p ≤ hi
//	          = max(0, 1 − (lo − p) / ramp)  for p < lo
//	          = max(0, 1 − (p − hi) / ramp)  for p > hi
//
// Edge cases: the band's edges give 1; the anchor reaches 0 at distance ramp from the band and stays 0
// beyond (so with ramp < lo a very hard env earns nothing, unlike DifficultyAnchor); p outside [0, 1] (a
// mean outcome under outcome.value = return) is not clamped, the distance formula covers it. ramp must be
// > 0: the caller uses DifficultyAnchor when regret.ramp is 0. The result is always in [0, 1].
func PlateauAnchor(p, lo, hi, ramp float64) float64 {
	switch {
	case p < lo:
		return math.Max(0, 1-(lo-p)/ramp)
	case p > hi:
		return math.Max(0, 1-(p-hi)/ramp)
	}
	return 1
}

// DesignerReward returns the blend w_regret · regret_term + w_anchor · anchor, the deployed Designer reward
// (SPADE §2.2; 0.4 and 0.6 by default, regret.weight_regret and regret.weight_anchor). It takes the regret
// term (RegretTerm: max(0, Δ), or clip(Δ / regret.scale, 0, 1)) and the anchor (DifficultyAnchor or
// PlateauAnchor) already computed. With non-negative weights it is non-decreasing in the regret at a fixed
// solve rate.
//
// The authors leave an env whose blend is negative out of the Designer's update (NegativeBlend, applied by
// rewardRows). With the clipped (or scaled and clipped) term, an anchor in [0, 1] and the weights the config
// accepts (≥ 0) the blend is never negative, so that mask never fires here; it is kept so the rule holds if
// a term that can go negative is ever blended in.
func DesignerReward(regretTerm, anchor, weightRegret, weightAnchor float64) float64 {
	return weightRegret*regretTerm + weightAnchor*anchor
}

// NegativeBlend reports whether a Designer reward blend is negative, in which case the env is left out of
// the skill-centering of the Designer's advantage (the authors mask it: kept, it would pull its skill's mean
// down and hand the other envs of the skill a positive advantage for nothing).
func NegativeBlend(blend float64) bool { return blend < 0 }

// EMAUpdate returns μ_t = (1 − γ) μ_{t−1} + γ r̄_t(s), one update of the per-skill exponential moving
// average of the mean no-hint return (SPADE §3.5); the weight γ is on the new value, as in the authors'
// tracker. r̄_t(s) is the step's mean (regret.ema_update = step) or the pool window's mean at the pool's end
// (regret.ema_update = pool, once per pool, the authors'). Edge case: the first observation of a skill (first =
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
