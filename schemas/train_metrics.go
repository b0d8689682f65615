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
}

// TrainMetricsSpec describes the train_metrics table.
var TrainMetricsSpec = register("train_metrics", 1, true, TrainMetricsRow{})

// Validate implements Row.
func (r TrainMetricsRow) Validate() error {
	c := checks{table: "train_metrics"}
	c.nonNegative("step", r.Step)
	enum(&c, "role", r.Role, TrainedRoles())
	c.finite("loss", r.Loss)
	c.unit("clip_frac", r.ClipFrac)
	c.nonNegative("tokens", r.Tokens)
	return c.err
}
