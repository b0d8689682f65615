package regret

import "github.com/spadekit/spade/schemas"

// VariantFunc computes one variant's reward for every env of a set (the envs of one step, or of one
// pool's window). Cross-env variants (ema_lp) use the whole set; slow maps a skill to μ_slow(s) after the
// step's update. An excluded env gets 0, and a timed-out one (EnvScore.TimedOut) regret.timeout_penalty.
type VariantFunc func(scores []EnvScore, p Params, slow map[string]float64) []float64

// variants is the registry: one formula per variant of schemas.VariantValues(), keyed by its name.
var variants = map[schemas.Variant]VariantFunc{
	schemas.VariantRegretAnchor: perEnv(func(s EnvScore, p Params) float64 {
		return DesignerReward(p.regretTerm(s.Regret), s.Anchor, p.WeightRegret, p.WeightAnchor)
	}),
	schemas.VariantRegret: perEnv(func(s EnvScore, _ Params) float64 { return s.Regret }),
	schemas.VariantAnchor: perEnv(func(s EnvScore, _ Params) float64 { return s.Anchor }),
	schemas.VariantEMALP:  emaLearningPotential,
	schemas.VariantRegretBased: perEnv(func(s EnvScore, _ Params) float64 {
		return WindowRegret(s.HintedMean, s.RNoHint)
	}),
}

// Rewards computes variant v for every env of scores. v must be one of schemas.VariantValues() (ParamsFrom
// and the run's config validation check regret.variant).
func Rewards(v schemas.Variant, scores []EnvScore, p Params, slow map[string]float64) []float64 {
	return variants[v](scores, p, slow)
}

func perEnv(f func(EnvScore, Params) float64) VariantFunc {
	return func(scores []EnvScore, p Params, _ map[string]float64) []float64 {
		out := make([]float64, len(scores))
		for i, s := range scores {
			switch {
			case s.TimedOut:
				out[i] = p.TimeoutPenalty
			case s.Scored():
				out[i] = f(s, p)
			}
		}
		return out
	}
}

// emaLearningPotential returns r_D^LP(e) = ρ(e) − (1/|E_s|) Σ_{e'∈E_s} ρ(e') with ρ(e) = |r̄(e) − μ_slow(s)|
// (SPADE §3.5). A skill without a baseline yet cannot occur: the step's own episodes initialise it. A
// timed-out env takes no part in the centering and gets regret.timeout_penalty.
func emaLearningPotential(scores []EnvScore, p Params, slow map[string]float64) []float64 {
	rho := make([]float64, len(scores))
	skills := make([]string, len(scores))
	include := make([]bool, len(scores))
	for i, s := range scores {
		skills[i], include[i] = s.Skill, s.Scored() && !s.TimedOut
		if include[i] {
			rho[i] = LearningPotential(s.RNoHint, slow[s.Skill])
		}
	}
	out := CenterBySkill(rho, skills, include)
	for i, s := range scores {
		if s.TimedOut {
			out[i] = p.TimeoutPenalty
		}
	}
	return out
}
