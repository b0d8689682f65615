package schemas

// GRPOBatchRow is one GRPO training sample: a prompt, the sampled response tokens with their behaviour
// log-probs, and the sample's advantage (table `grpo_batches`, partitioned by step).
type GRPOBatchRow struct {
	// Step is the training step.
	Step int64 `parquet:"step"`
	// Role is agent or designer.
	Role Role `parquet:"role"`
	// Batch numbers the global batches of the step (each at most grpo.global_batch samples), from 0.
	Batch int32 `parquet:"batch"`
	// SampleID is unique within the step (the llm call id, plus the turn for agent samples).
	SampleID string `parquet:"sample_id"`
	// EpisodeID is the agent sample's episode; empty for designer samples.
	EpisodeID string `parquet:"episode_id"`
	// EnvID is the env the sample concerns.
	EnvID string `parquet:"env_id"`
	// PromptIDs are the prompt's token ids as sampled.
	PromptIDs []int32 `parquet:"prompt_ids,list"`
	// ResponseIDs are the response's token ids as sampled (non-empty).
	ResponseIDs []int32 `parquet:"response_ids,list"`
	// OldLogprobs are the behaviour log-probs of ResponseIDs (same length, each <= 0).
	OldLogprobs []float32 `parquet:"old_logprobs,list"`
	// Advantage is the sample's advantage, broadcast over its response tokens (finite).
	Advantage float64 `parquet:"advantage"`
	// ISWeight is a precomputed importance weight (1 for agent samples); the trainer recomputes the
	// truncated weight min(ISCap, π_θ/π_behaviour) for designer samples.
	ISWeight float64 `parquet:"is_weight"`
	// ISCap is grpo.tis_cap for designer samples, 0 for agent samples (no truncated IS).
	ISCap float64 `parquet:"is_cap"`
}

// GRPOBatchesSpec describes the grpo_batches table.
var GRPOBatchesSpec = register("grpo_batches", 1, true, GRPOBatchRow{})

// Validate implements Row.
func (r GRPOBatchRow) Validate() error {
	c := checks{table: "grpo_batches"}
	c.nonNegative("step", r.Step)
	enum(&c, "role", r.Role, TrainedRoles())
	c.required("sample_id", r.SampleID)
	if len(r.ResponseIDs) == 0 {
		c.fail("response_ids", "sample %s has no response tokens", r.SampleID)
	}
	if len(r.OldLogprobs) != len(r.ResponseIDs) {
		c.fail("old_logprobs", "sample %s has %d logprobs for %d response tokens", r.SampleID, len(r.OldLogprobs), len(r.ResponseIDs))
	}
	c.finite("advantage", r.Advantage)
	c.finite("is_weight", r.ISWeight)
	return c.err
}
