package schemas

// DesignerRewardRow is the Designer's reward for one env under one reward variant (table
// `designer_rewards`, partitioned by step). Rows with Final set are the pool-end aggregates GRPO uses.
type DesignerRewardRow struct {
	// Step is the step the reward was computed at.
	Step int64 `parquet:"step"`
	// PoolStep is the env's pool step.
	PoolStep int64 `parquet:"pool_step"`
	// EnvID is the environment scored.
	EnvID string `parquet:"env_id"`
	// Skill is the env's skill.
	Skill string `parquet:"skill"`
	// Variant is regret_anchor (deployed), regret, anchor or ema_lp.
	Variant Variant `parquet:"variant"`
	// Final is true for the aggregate over the pool's whole window, written at the pool's last step.
	Final bool `parquet:"final"`
	// NNoHint and NHint count the episodes used (env errors excluded).
	NNoHint int32 `parquet:"n_nohint"`
	NHint   int32 `parquet:"n_hint"`
	// SolveRate is the success fraction of the no-hint episodes, in [0, 1].
	SolveRate float64 `parquet:"solve_rate"`
	// RNoHint is r̄(e), the mean no-hint return.
	RNoHint float64 `parquet:"r_nohint"`
	// RHint is r̄(e|h), the mean hinted return (equal to RNoHint when there are no hinted episodes).
	RHint float64 `parquet:"r_hint"`
	// Regret is r̄(e|h) − r̄(e), unclipped.
	Regret float64 `parquet:"regret"`
	// Anchor is the flat-top difficulty anchor of SolveRate, in [0, 1].
	Anchor float64 `parquet:"anchor"`
	// Reward is the variant's Designer reward.
	Reward float64 `parquet:"reward"`
	// Excluded names why the env got no reward (e.g. every episode ended in env_error); empty otherwise.
	Excluded string `parquet:"excluded"`
}

// DesignerRewardsSpec describes the designer_rewards table.
var DesignerRewardsSpec = register("designer_rewards", 1, true, DesignerRewardRow{})

// Validate implements Row.
func (r DesignerRewardRow) Validate() error {
	c := checks{table: "designer_rewards"}
	c.nonNegative("step", r.Step)
	c.required("env_id", r.EnvID)
	enum(&c, "variant", r.Variant, VariantValues())
	c.unit("solve_rate", r.SolveRate)
	c.unit("anchor", r.Anchor)
	c.finite("reward", r.Reward)
	c.finite("regret", r.Regret)
	return c.err
}
