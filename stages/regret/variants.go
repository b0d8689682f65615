package regret

import (
	"fmt"
	"strings"
)

// Variant names a Designer reward (designer_rewards.variant; regret.variant picks the one GRPO uses).
type Variant string

// The reward variants, computed side by side for every env (SPADE §2.2, §2.3, §3.5).
const (
	// RegretAnchor is the deployed reward: w_r · max(0, regret) + w_a · anchor.
	RegretAnchor Variant = "regret_anchor"
	// RegretOnly is the hint regret alone, r̄(e|h) − r̄(e), unclipped as in §2.3.
	RegretOnly Variant = "regret"
	// AnchorOnly is the difficulty anchor alone.
	AnchorOnly Variant = "anchor"
	// EMALP is the EMA learning potential, ρ(e) − mean_{E_s} ρ.
	EMALP Variant = "ema_lp"
)

// VariantFunc computes one variant's reward for every env of a set (the envs of one step, or of one
// pool's window). Cross-env variants (ema_lp) use the whole set; slow maps a skill to μ_slow(s) after the
// step's update. An excluded env gets 0.
type VariantFunc func(scores []EnvScore, p Params, slow map[string]float64) []float64

// variants is the registry, keyed by name; variantOrder is the order rows are written in.
var (
	variants = map[Variant]VariantFunc{
		RegretAnchor: perEnv(func(s EnvScore, p Params) float64 {
			return DesignerReward(ClippedRegret(s.Regret), s.Anchor, p.WeightRegret, p.WeightAnchor)
		}),
		RegretOnly: perEnv(func(s EnvScore, _ Params) float64 { return s.Regret }),
		AnchorOnly: perEnv(func(s EnvScore, _ Params) float64 { return s.Anchor }),
		EMALP:      emaLearningPotential,
	}
	variantOrder = []Variant{RegretAnchor, RegretOnly, AnchorOnly, EMALP}
)

// Variants returns the registered variants in their canonical order.
func Variants() []Variant { return append([]Variant(nil), variantOrder...) }

// ParseVariant validates a variant name (for regret.variant and --variant flags).
func ParseVariant(name string) (Variant, error) {
	if _, ok := variants[Variant(name)]; ok {
		return Variant(name), nil
	}
	names := make([]string, len(variantOrder))
	for i, v := range variantOrder {
		names[i] = string(v)
	}
	return "", fmt.Errorf("unknown reward variant %q (one of %s)", name, strings.Join(names, ", "))
}

// Rewards computes variant v for every env of scores.
func Rewards(v Variant, scores []EnvScore, p Params, slow map[string]float64) []float64 {
	return variants[v](scores, p, slow)
}

func perEnv(f func(EnvScore, Params) float64) VariantFunc {
	return func(scores []EnvScore, p Params, _ map[string]float64) []float64 {
		out := make([]float64, len(scores))
		for i, s := range scores {
			if s.Scored() {
				out[i] = f(s, p)
			}
		}
		return out
	}
}

// emaLearningPotential returns r_D^LP(e) = ρ(e) − (1/|E_s|) Σ_{e'∈E_s} ρ(e') with ρ(e) = |r̄(e) − μ_slow(s)|
// (SPADE §3.5). A skill without a baseline yet cannot occur: the step's own episodes initialise it.
func emaLearningPotential(scores []EnvScore, _ Params, slow map[string]float64) []float64 {
	rho := make([]float64, len(scores))
	skills := make([]string, len(scores))
	include := make([]bool, len(scores))
	for i, s := range scores {
		skills[i], include[i] = s.Skill, s.Scored()
		if include[i] {
			rho[i] = LearningPotential(s.RNoHint, slow[s.Skill])
		}
	}
	return CenterBySkill(rho, skills, include)
}
