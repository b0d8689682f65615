package schemas

// EMAStateRow is the per-skill state of the EMA learning-potential reward variant (SPADE §3.5): a fast and
// a slow exponential moving average of the skill's mean no-hint return (table `ema_state`, partitioned by
// step). The regret stage writes one partition per step holding every skill seen so far, so a resumed run
// continues from the newest partition before its step.
type EMAStateRow struct {
	// Step is the step whose episodes were last folded in.
	Step int64 `parquet:"step"`
	// Skill is the skill the averages track.
	Skill string `parquet:"skill"`
	// MuFast is μ_fast(s), the average with γ = regret.ema_fast.
	MuFast float64 `parquet:"mu_fast"`
	// MuSlow is μ_slow(s), the average with γ = regret.ema_slow (the baseline the reward uses).
	MuSlow float64 `parquet:"mu_slow"`
	// GammaFast and GammaSlow are the weights used, in (0, 1].
	GammaFast float64 `parquet:"gamma_fast"`
	GammaSlow float64 `parquet:"gamma_slow"`
	// Rounds counts the steps folded into the averages (the first one initialises them), >= 1.
	Rounds int64 `parquet:"rounds"`
	// LastObserved is the last step at which the skill was played (<= Step).
	LastObserved int64 `parquet:"last_observed"`
	// LastMean is r̄_t(s) at LastObserved: the mean over the skill's scored envs of r̄(e).
	LastMean float64 `parquet:"last_mean"`
}

// EMAStateSpec describes the ema_state table.
var EMAStateSpec = register("ema_state", 1, true, EMAStateRow{})

// Validate implements Row.
func (r EMAStateRow) Validate() error {
	c := checks{table: "ema_state"}
	c.nonNegative("step", r.Step)
	c.required("skill", r.Skill)
	c.finite("mu_fast", r.MuFast)
	c.finite("mu_slow", r.MuSlow)
	c.finite("last_mean", r.LastMean)
	if !(r.GammaFast > 0 && r.GammaFast <= 1) {
		c.fail("gamma_fast", "must be in (0, 1], got %v", r.GammaFast)
	}
	if !(r.GammaSlow > 0 && r.GammaSlow <= 1) {
		c.fail("gamma_slow", "must be in (0, 1], got %v", r.GammaSlow)
	}
	if r.Rounds < 1 {
		c.fail("rounds", "must be >= 1, got %d", r.Rounds)
	}
	if r.LastObserved > r.Step {
		c.fail("last_observed", "must be <= step %d, got %d", r.Step, r.LastObserved)
	}
	return c.err
}
