package schemas

// RLVELevelRow is one RLVE environment's difficulty state at a pool step of a run whose pool is an RLVE
// pool (table `rlve_levels`, partitioned by step; written by the pool stage with the step's envs, one row
// per environment of the pool whether or not the step drew it). The
// state is RLVE's sliding window: problems are drawn from the levels [Low, High]; the plays at level
// High since the last check are counted, and once there are sample.rlve_tau_num of them High rises by
// one when at least sample.rlve_tau_acc of them succeeded, Low following to keep at most
// sample.rlve_window levels; either way the count starts again.
type RLVELevelRow struct {
	// Step is the pool step whose envs this state drew.
	Step int64 `parquet:"step"`
	// Name is the environment's RLVE identifier (pools.name).
	Name string `parquet:"name"`
	// EntryID is the pool row the env was drawn from (pools.id).
	EntryID string `parquet:"entry_id"`
	// Drawn is true when the step drew the environment as one of its envs.
	Drawn bool `parquet:"drawn"`
	// EnvID is the env drawn at this step (envs.env_id); empty when not drawn.
	EnvID string `parquet:"env_id"`
	// Low and High are the window of levels after folding in every play before this step, 0 ≤ Low ≤
	// High ≤ sample.rlve_max_level.
	Low  int32 `parquet:"low"`
	High int32 `parquet:"high"`
	// Level is the level this step's problem is generated at, drawn uniformly from [Low, High] (High when
	// not drawn).
	Level int32 `parquet:"level"`
	// ProblemSeed is the generator seed of this step's problem, which every play of the env shares (0
	// when not drawn).
	ProblemSeed int64 `parquet:"problem_seed"`
	// Attempts and Successes count the plays at level High since the last check (Successes: a return
	// above 0), carried to the next step.
	Attempts  int64 `parquet:"attempts"`
	Successes int64 `parquet:"successes"`
	// Promoted is true when High rose in the update that produced this row.
	Promoted bool `parquet:"promoted"`
}

// RLVELevelsSpec describes the rlve_levels table.
var RLVELevelsSpec = register("rlve_levels", 1, true, RLVELevelRow{})

// Validate implements Row.
func (r RLVELevelRow) Validate() error {
	c := checks{table: "rlve_levels"}
	c.nonNegative("step", r.Step)
	c.required("name", r.Name)
	c.required("entry_id", r.EntryID)
	if r.Drawn {
		c.required("env_id", r.EnvID)
	}
	c.nonNegative("low", int64(r.Low))
	if r.High < r.Low {
		c.fail("high", "must be >= low (%d), got %d", r.Low, r.High)
	}
	if r.Level < r.Low || r.Level > r.High {
		c.fail("level", "must be in [low, high] = [%d, %d], got %d", r.Low, r.High, r.Level)
	}
	c.nonNegative("problem_seed", r.ProblemSeed)
	c.nonNegative("attempts", r.Attempts)
	c.nonNegative("successes", r.Successes)
	if r.Successes > r.Attempts {
		c.fail("successes", "must be <= attempts (%d), got %d", r.Attempts, r.Successes)
	}
	return c.err
}
