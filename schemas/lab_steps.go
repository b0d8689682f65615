package schemas

// LabStepRow is what `spade lab` measured at one step of a lab run (table `lab_steps`, partitioned by
// step): the instruments that say whether the loop is closed, written after the step's stages.
type LabStepRow struct {
	// Step is the training step.
	Step int64 `parquet:"step"`
	// AgentISWeight is the Agent's mean importance weight in the step's update (train_metrics'
	// is_weight_mean of the agent row: min(tis_cap, π_trainer/π_server) per token); 1 when the server's
	// and the trainer's log-probs agree. NaN when the step trained no Agent sample.
	AgentISWeight float64 `parquet:"agent_is_weight"`
	// DesignerISWeight is the same for the Designer's samples, off-policy by a pool; NaN when none.
	DesignerISWeight float64 `parquet:"designer_is_weight"`
	// ExpectedVersion is the weights version every call of the step should have been served with: the
	// version the previous step published (the served model name before the first publication).
	ExpectedVersion string `parquet:"expected_version"`
	// Calls counts the completions the server sampled during the step; CallsOffVersion those it served
	// with another version than ExpectedVersion (0 when the loop is closed).
	Calls           int64 `parquet:"calls"`
	CallsOffVersion int64 `parquet:"calls_off_version"`
	// RecordedOffVersion counts the step's llm_calls rows whose weights_version differs from
	// ExpectedVersion (what spade believed it called).
	RecordedOffVersion int64 `parquet:"recorded_off_version"`
	// PublishedVersion is the version the step's update published; TrainerSHA256 the SHA-256 of the
	// weights file the trainer saved for it, ServerSHA256 that of the file the server loaded after it.
	PublishedVersion string `parquet:"published_version"`
	TrainerSHA256    string `parquet:"trainer_sha256"`
	ServerSHA256     string `parquet:"server_sha256"`
	// MeanDifficulty is the mean difficulty of the envs of the step's pool (the lab world's need plus 2
	// for a hidden goal), NaN when the pool has none.
	MeanDifficulty float64 `parquet:"mean_difficulty"`
	// SolveRate and HintedSolveRate are the Agent's solve rates over the step's counted episodes without
	// and with the hint (NaN when the side has none).
	SolveRate       float64 `parquet:"solve_rate"`
	HintedSolveRate float64 `parquet:"hinted_solve_rate"`
	// Seconds is the wall time of the step's stages.
	Seconds float64 `parquet:"seconds"`
}

// LabStepsSpec describes the lab_steps table.
var LabStepsSpec = register("lab_steps", 1, true, LabStepRow{})

// Validate implements Row.
func (r LabStepRow) Validate() error {
	c := checks{table: "lab_steps"}
	c.nonNegative("step", r.Step)
	c.nonNegative("calls", r.Calls)
	c.nonNegative("calls_off_version", r.CallsOffVersion)
	c.nonNegative("recorded_off_version", r.RecordedOffVersion)
	c.required("expected_version", r.ExpectedVersion)
	return c.err
}
