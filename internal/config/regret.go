package config

import "github.com/spadekit/spade/schemas"

// Regret configures the Designer's reward (stages/regret): the blend of the hint regret
// Δ = r̄(e|h) − r̄(e) and the difficulty anchor, and the per-skill EMA baselines of the ema_lp variant.
// The deployed reward is weight_regret · clip(Δ/scale, 0, 1) + weight_anchor · anchor(solve rate), the
// regret term max(0, Δ) when scale is 0.
type Regret struct {
	// WeightRegret is the weight of the hint-regret term in the deployed reward (the authors'
	// --spade-regret-weight, 0.4).
	WeightRegret float64 `json:"weight_regret" range:"[0,1]"`
	// WeightAnchor is the weight of the difficulty anchor in the deployed reward (the authors'
	// --spade-plateau-* weight, 0.6).
	WeightAnchor float64 `json:"weight_anchor" range:"[0,1]"`
	// BandLo is the low end of the anchor's flat top. A solve rate in [band_lo, band_hi] earns the whole
	// anchor (the authors' plateau, 0.4).
	BandLo float64 `json:"band_lo" range:"[0,1]"`
	// BandHi is the high end of the anchor's flat top, at least regret.band_lo (the authors' plateau,
	// 0.6).
	BandHi float64 `json:"band_hi" range:"[0,1]"`
	// Variant is the reward GRPO trains the Designer on; regret_anchor, regret, anchor and ema_lp are
	// always written to designer_rewards, regret_based when it is the one trained on. regret_anchor is the
	// deployed blend, regret the hint regret alone (unclipped), anchor the anchor alone, ema_lp the learning
	// potential of the per-skill EMA baselines, regret_based max(0, r̄(e|h) − r̄(e)) with r̄(e) over the
	// pool's whole window (the authors' 4B tools reward).
	Variant schemas.Variant `json:"variant"`
	// EMAFast is the fast per-skill EMA baseline's weight on the new value (the ema_lp variant; the
	// authors' --spade-gamma1, 0.98).
	EMAFast float64 `json:"ema_fast" range:"(0,1]"`
	// EMASlow is the slow per-skill EMA baseline's weight on the new value (the ema_lp variant; the
	// authors' --spade-gamma2, 0.85).
	EMASlow float64 `json:"ema_slow" range:"(0,1]"`
	// Scale divides the hint regret before it is clipped to [0, 1]; 0 keeps the unscaled max(0, Δ). The
	// regret term is clip(Δ/scale, 0, 1) (the authors' --spade-regret-scale, 0.15).
	Scale float64 `json:"scale" range:">=0"`
	// Ramp is the distance outside the anchor's flat top over which it falls from 1 to 0. 0 makes it fall
	// linearly to 0 at solve rates 0 and 1 (the authors' plateau ramp, 0.25).
	Ramp float64 `json:"ramp" range:">=0"`
	// Delta is which unhinted plays the hint regret compares the hinted ones with: matched or window.
	// matched takes those of the hinted plays' own step, the anchor on their mean outcome (the authors'
	// delayed env rewards); window every unhinted play of the pool's window, the anchor on the solve rate.
	Delta RegretDelta `json:"delta"`
	// EMAUpdate is how often the EMA baselines move: pool or step. pool moves them once per pool, at its
	// end, on the window's means (the authors'); step at every step, on the step's means.
	EMAUpdate EMAUpdate `json:"ema_update"`
	// TimeoutPenalty is the Designer's reward, in every variant, for an env one of whose episodes ended
	// because its program overran the step deadline (ended_by timeout): the env is rewarded with it
	// instead of being left out. 0 turns it off, leaving such envs to outcome.exclude_ended_by, which
	// drops the timed-out play and scores the env on its others (the authors' blend reward, every preset
	// but 4B tools). -0.5 is the authors' regret_based penalty (the 4B tools preset); set it under another
	// variant to penalise hung programs there too.
	TimeoutPenalty float64 `json:"timeout_penalty" range:"[-1,0]"`
}

func init() {
	registerEnum(schemas.VariantValues())
	registerEnum(RegretDeltaValues())
	registerEnum(EMAUpdateValues())
}

// RegretDelta is regret.delta: which unhinted plays the hint regret Δ compares the hinted plays with.
type RegretDelta string

// The regret deltas.
const (
	// DeltaMatched compares with the unhinted plays of the same (pool-start) step as the hinted ones.
	DeltaMatched RegretDelta = "matched"
	// DeltaWindow compares with every unhinted play of the pool's window.
	DeltaWindow RegretDelta = "window"
)

// RegretDeltaValues lists every delta.
func RegretDeltaValues() []RegretDelta { return []RegretDelta{DeltaMatched, DeltaWindow} }

// EMAUpdate is regret.ema_update: how often the per-skill EMA baselines move.
type EMAUpdate string

// The EMA update schedules.
const (
	// EMAPerPool updates once per pool (the authors').
	EMAPerPool EMAUpdate = "pool"
	// EMAPerStep updates at every step.
	EMAPerStep EMAUpdate = "step"
)

// EMAUpdateValues lists every schedule.
func EMAUpdateValues() []EMAUpdate { return []EMAUpdate{EMAPerPool, EMAPerStep} }

// validate checks that the anchor's band is not empty.
func (r Regret) validate(*Config) error {
	if r.BandLo > r.BandHi {
		return invalidf("config: key \"regret.band_lo\" (%v) must be at most regret.band_hi (%v)", r.BandLo, r.BandHi)
	}
	return nil
}

// presetRegret is the authors' Designer reward: 0.4 · clip(Δ/0.15, 0, 1) + 0.6 · the plateau anchor on
// [0.4, 0.6] with a 0.25 ramp, Δ against the matched step, EMA weights 0.98 and 0.85 moved once a pool, and
// no timeout penalty (their blend reward has none: a play whose step hung is dropped and the env scored on
// its other plays). The 4B tools script rewards the floored window regret, regret_based, with -0.5 for an
// env whose step timed out.
func presetRegret(p presetSpec) Regret {
	r := Regret{WeightRegret: 0.4, WeightAnchor: 0.6, BandLo: 0.4, BandHi: 0.6, Variant: schemas.VariantRegretAnchor,
		EMAFast: 0.98, EMASlow: 0.85, Scale: 0.15, Ramp: 0.25, Delta: DeltaMatched, EMAUpdate: EMAPerPool}
	if p.ownToolsScript() {
		// --spade-env-reward-variant regret_based: max(0, r̄(e|h) − r̄_window(e)) unscaled, and the step-timeout
		// penalty (its --spade-use-solver-variance-reward only acts on the learning-potential variant).
		r.Variant, r.Scale, r.TimeoutPenalty = schemas.VariantRegretBased, 0, -0.5
	}
	return r
}
