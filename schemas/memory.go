package schemas

// MemoryRow is one entry of the Designer's FIFO environment memory. Each pool end commits a snapshot
// partition holding the whole memory (table `memory`, partitioned by the pool's last step); the generate
// stage reads the newest snapshot before its step.
type MemoryRow struct {
	// Step is the step of the snapshot.
	Step int64 `parquet:"step"`
	// Position orders entries oldest first (0 is the next to be evicted).
	Position int32 `parquet:"position"`
	// PoolStep is the pool the env came from.
	PoolStep int64 `parquet:"pool_step"`
	// EnvID is the remembered environment.
	EnvID string `parquet:"env_id"`
	// Skill is the env's skill.
	Skill string `parquet:"skill"`
	// Regret is the env's final r̄(e|h) − r̄(e).
	Regret float64 `parquet:"regret"`
	// SolveRate is the env's final no-hint solve rate, in [0, 1].
	SolveRate float64 `parquet:"solve_rate"`
	// Label is seed, too_easy or too_hard.
	Label string `parquet:"label"`
	// Code is the env program.
	Code string `parquet:"code"`
	// Hint is the env's hint.
	Hint string `parquet:"hint"`
}

// MemorySpec describes the memory table.
var MemorySpec = register("memory", 1, true, MemoryRow{})

// Validate implements Row.
func (r MemoryRow) Validate() error {
	c := checks{table: "memory"}
	c.nonNegative("step", r.Step)
	c.required("env_id", r.EnvID)
	c.oneOf("label", r.Label, LabelSeed, LabelTooEasy, LabelTooHard)
	c.unit("solve_rate", r.SolveRate)
	c.finite("regret", r.Regret)
	return c.err
}
