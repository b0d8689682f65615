package schemas

// GateResultRow is the verdict of one gate check on one candidate (table `gate_results`, partitioned by
// the pool step).
type GateResultRow struct {
	// Step is the pool step.
	Step int64 `parquet:"step"`
	// Slot is the candidate's slot.
	Slot int32 `parquet:"slot"`
	// EnvID is the candidate's env_id.
	EnvID string `parquet:"env_id"`
	// Attempt is the candidate's attempt number (from 1).
	Attempt int32 `parquet:"attempt"`
	// Check names the gate check; stages/gate.CheckNames lists them per setting, in the order they run
	// (static, load, ..., hint_leak; tools_* in the tools setting).
	Check string `parquet:"check"`
	// Passed is true when the check passed (false when skipped).
	Passed bool `parquet:"passed"`
	// Skipped is true when the check did not run (no screen model configured, or an earlier check failed).
	Skipped bool `parquet:"skipped"`
	// Error says why the check failed; empty when it passed.
	Error string `parquet:"error"`
	// DurationMS is the check's wall time in milliseconds, >= 0.
	DurationMS float64 `parquet:"duration_ms"`
}

// GateResultsSpec describes the gate_results table.
var GateResultsSpec = register("gate_results", 1, true, GateResultRow{})

// Validate implements Row.
func (r GateResultRow) Validate() error {
	c := checks{table: "gate_results"}
	c.nonNegative("step", r.Step)
	c.required("env_id", r.EnvID)
	c.required("check", r.Check)
	if r.Passed && r.Skipped {
		c.fail("skipped", "a skipped check cannot have passed")
	}
	if r.DurationMS < 0 {
		c.fail("duration_ms", "must be >= 0, got %v", r.DurationMS)
	}
	c.utf8("error", r.Error)
	return c.err
}
