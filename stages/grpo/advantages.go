package grpo

import (
	"fmt"
	"math"

	"github.com/spadekit/spade/internal/config"
)

// AdvantageEpsilon is ε in the agent advantage's denominator (docs/architecture.md, "Formulas"; as verl and
// TRL use).
const AdvantageEpsilon = 1e-6

// ComputeGRPOOutcomeAdvantage returns Â_i = (r_i − mean_G) / (std_G + ε) for the returns of one group (one
// env's episodes; SPADE §2.2; docs/architecture.md, "Formulas"), std_G with the n−1 divisor and ε = eps.
//
// Edge cases: a group of one (G = 1, std undefined) and a group whose returns are all equal (std 0) give
// every member 0, exactly; an empty group gives an empty slice. The advantages of a group sum to 0.
func ComputeGRPOOutcomeAdvantage(returns []float64, eps float64) []float64 {
	return standardizeGroup(returns, eps, 1)
}

// PopulationAdvantageEpsilon is ε of the population-std advantage (the authors' 1e-8).
const PopulationAdvantageEpsilon = 1e-8

// ComputeGRPOPopulationAdvantage returns Â_i = (r_i − mean_G) / (σ_G + ε) with σ_G the population
// standard deviation (divisor n, numpy's np.std) and ε = eps: the authors' per-game normalisation
// (grpo.adv_std = population).
//
// Edge cases: a group of one and a group whose returns are all equal give every member 0, exactly (the
// check is on the returns, not on σ, so a rounding residue of the mean is never divided by ε); an empty
// group gives an empty slice. The advantages of a group sum to 0.
func ComputeGRPOPopulationAdvantage(returns []float64, eps float64) []float64 {
	return standardizeGroup(returns, eps, 0)
}

// standardizeGroup returns (r_i − mean) / (std + eps) for the returns of one group, std with the divisor
// n − ddof (1: sample, 0: population). A group of fewer than two returns, or of equal returns, gives
// zeros, exactly; an empty group an empty slice.
func standardizeGroup(returns []float64, eps float64, ddof int) []float64 {
	out := make([]float64, len(returns))
	n := len(returns)
	if n < 2 {
		return out
	}
	mean := 0.0
	allEqual := true
	for _, r := range returns {
		mean += r
		allEqual = allEqual && r == returns[0]
	}
	if allEqual {
		return out
	}
	mean /= float64(n)
	ss := 0.0
	for _, r := range returns {
		ss += (r - mean) * (r - mean)
	}
	std := math.Sqrt(ss / float64(n-ddof))
	for i, r := range returns {
		out[i] = (r - mean) / (std + eps)
	}
	return out
}

// groupAdvantage returns the Agent advantage grpo.adv_std names ("" reads as sample, the zero value).
func groupAdvantage(std config.AdvStd) (func([]float64) []float64, error) {
	switch std {
	case config.AdvStdSample, "":
		return func(r []float64) []float64 { return ComputeGRPOOutcomeAdvantage(r, AdvantageEpsilon) }, nil
	case config.AdvStdPopulation:
		return func(r []float64) []float64 { return ComputeGRPOPopulationAdvantage(r, PopulationAdvantageEpsilon) }, nil
	}
	return nil, fmt.Errorf("grpo: config key \"grpo.adv_std\": unknown value %q (one of %v)", std, config.AdvStdValues())
}

// ComputeDesignerAdvantage returns A(e) = R(e) − mean{R(e') : skill(e') = skill(e)}, each env's Designer
// reward centred on the mean over the pool's envs of the same skill (SPADE §2.2: the Designer's rewards
// are mean-centred across same-skill envs, not standardized). DesignerSamples multiplies the result by
// grpo.designer_adv_scale (a number, or ComputeDesignerAdvScale under auto; 1 by default).
//
// Edge case: a skill with a single env gives it 0. The advantages of each skill sum to 0.
func ComputeDesignerAdvantage(rewards []float64, skills []string) []float64 {
	sum := map[string]float64{}
	count := map[string]int{}
	for i, r := range rewards {
		sum[skills[i]] += r
		count[skills[i]]++
	}
	out := make([]float64, len(rewards))
	for i, r := range rewards {
		out[i] = r - sum[skills[i]]/float64(count[skills[i]])
	}
	return out
}

// DesignerAdvScaleCap bounds the automatic Designer advantage scale (the authors' max_env_reward_scale).
const DesignerAdvScaleCap = 50.0

// ComputeDesignerAdvScale returns the automatic multiplier of the Designer's centred rewards
// (grpo.designer_adv_scale = auto; the authors' compute_env_reward_scale):
//
//	scale = min(50, agent plays per step / Designer samples per pool × sample.refresh_every)
//
// so the Designer, which gets one sample per env once per pool, weighs about as much in the updates as the
// Agent's plays over that pool: 192 plays / 24 designs × 4 = 32 in the authors' games setting. Edge cases:
// no plays or no Designer samples (or a refresh interval ≤ 0) give 1, the authors' fallback; the cap
// applies from 50 on.
func ComputeDesignerAdvScale(agentPlays, designerSamples, refreshEvery int) float64 {
	if agentPlays <= 0 || designerSamples <= 0 || refreshEvery <= 0 {
		return 1
	}
	return math.Min(DesignerAdvScaleCap, float64(agentPlays)/float64(designerSamples)*float64(refreshEvery))
}
