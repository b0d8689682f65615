package regret

import (
	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/schemas"
)

// PoolScorer is the regret stage's formulas as `spade ablate --rescore` replays them over a run
// (analytics.PoolScorer): the per-skill EMA state folded as regret.ema_update says (every step's scores,
// or once per pool its window's), and at each pool end every variant's reward of the pool's envs, as the
// stage's final rows compute them.
type PoolScorer struct {
	params Params
	state  []schemas.EMAStateRow
	last   int64 // the last step folded
}

// NewPoolScorer returns a PoolScorer with params and no EMA state (a run's first step).
func NewPoolScorer(p Params) *PoolScorer { return &PoolScorer{params: p} }

// Variants implements analytics.PoolScorer: the deployed variant first.
func (s *PoolScorer) Variants() []string {
	names := []string{string(s.params.Deployed)}
	for _, v := range schemas.VariantValues() {
		if v != s.params.Deployed {
			names = append(names, string(v))
		}
	}
	return names
}

// Step implements analytics.PoolScorer: under regret.ema_update = step the step's scores move the EMA
// state; under pool the state waits for the pool's end.
func (s *PoolScorer) Step(step int64, episodes []schemas.EpisodeRow) {
	s.last = step
	if !s.params.perPool() {
		s.state = FoldEMA(s.state, ScoreEpisodes(episodes, s.params), step, s.params)
	}
}

// PoolEnd implements analytics.PoolScorer: the pool window's scores (folded into the EMA state first
// under regret.ema_update = pool) and every variant's reward of each scored env.
func (s *PoolScorer) PoolEnd(poolStep int64, episodes []schemas.EpisodeRow) []analytics.RescoredEnv {
	scores := ScoreEpisodes(episodes, s.params)
	if s.params.perPool() {
		s.state = FoldEMA(s.state, scores, s.last, s.params)
	}
	slow := SlowBaselines(s.state)
	out := make([]analytics.RescoredEnv, len(scores))
	for i, sc := range scores {
		out[i] = analytics.RescoredEnv{EnvID: sc.EnvID, Skill: sc.Skill, PoolStep: poolStep, SolveRate: sc.SolveRate,
			Regret: sc.Regret, Rewards: map[string]float64{}}
	}
	for _, v := range schemas.VariantValues() {
		rewards := Rewards(v, scores, s.params, slow)
		for i, sc := range scores {
			if sc.Scored() {
				out[i].Rewards[string(v)] = rewards[i]
			}
		}
	}
	return out
}

var _ analytics.PoolScorer = (*PoolScorer)(nil)
