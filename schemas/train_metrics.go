package schemas

// TrainMetricsRow is what one trainer update reports for one role (table `train_metrics`, partitioned by
// step).
type TrainMetricsRow struct {
	// Step is the training step.
	Step int64 `parquet:"step"`
	// Role is agent or designer.
	Role Role `parquet:"role"`
	// Loss is the mean GRPO loss over the step's batches.
	Loss float64 `parquet:"loss"`
	// KL is the mean k3 KL estimate to the reference policy (0 when grpo.kl_beta is 0).
	KL float64 `parquet:"kl"`
	// ClipFrac is the fraction of response tokens whose ratio was clipped, in [0, 1].
	ClipFrac float64 `parquet:"clip_frac"`
	// ClipFracLow and ClipFracHigh split ClipFrac by which side of [1-ε_low, 1+ε_high] clipped.
	ClipFracLow  float64 `parquet:"clip_frac_low"`
	ClipFracHigh float64 `parquet:"clip_frac_high"`
	// RatioMean and RatioMax summarise π_θ/π_old over response tokens.
	RatioMean float64 `parquet:"ratio_mean"`
	RatioMax  float64 `parquet:"ratio_max"`
	// ISWeightMean is the mean truncated IS weight (1 for agent samples).
	ISWeightMean float64 `parquet:"is_weight_mean"`
	// GradNorm is the gradient norm before clipping.
	GradNorm float64 `parquet:"grad_norm"`
	// LR is the learning rate used.
	LR float64 `parquet:"lr"`
	// Tokens is the number of response tokens trained on.
	Tokens int64 `parquet:"tokens"`
	// Samples is the number of samples trained on.
	Samples int64 `parquet:"samples"`
	// WeightsVersion is the name the new weights were published under.
	WeightsVersion string `parquet:"weights_version"`
	// Seconds is the wall time of the update.
	Seconds float64 `parquet:"seconds"`
	// LeftOutBrokenPrefix, LeftOutMissingTokens and LeftOutMissingCall count, on the agent row, the
	// step's Agent plays left out of training because their samples could not be assembled, per cause
	// (grpo.max_left_out_share): a token sequence that does not extend itself, a call without token ids
	// or log-probs, a turn whose call is missing. 0 on designer rows, and in version 1 rows.
	LeftOutBrokenPrefix  int64 `parquet:"left_out_broken_prefix"`
	LeftOutMissingTokens int64 `parquet:"left_out_missing_tokens"`
	LeftOutMissingCall   int64 `parquet:"left_out_missing_call"`
	// PeakMemoryBytes is the trainer process's peak memory during the step's update, every role together
	// (the same on each role's row): allocated CUDA bytes on a GPU, the peak resident set on CPU. 0 in
	// rows of versions 1 and 2, which did not record it.
	PeakMemoryBytes int64 `parquet:"peak_memory_bytes"`
}

// TrainMetricsSpec describes the train_metrics table. Version 2 added the left_out_* counts, version 3
// peak_memory_bytes; older rows read with them 0.
var TrainMetricsSpec = register("train_metrics", 3, true, TrainMetricsRow{})

// Validate implements Row.
func (r TrainMetricsRow) Validate() error {
	c := checks{table: "train_metrics"}
	c.nonNegative("step", r.Step)
	enum(&c, "role", r.Role, TrainedRoles())
	c.finite("loss", r.Loss)
	c.unit("clip_frac", r.ClipFrac)
	c.nonNegative("tokens", r.Tokens)
	c.nonNegative("left_out_broken_prefix", r.LeftOutBrokenPrefix)
	c.nonNegative("left_out_missing_tokens", r.LeftOutMissingTokens)
	c.nonNegative("left_out_missing_call", r.LeftOutMissingCall)
	return c.err
}
