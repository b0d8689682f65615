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
	// LossMask marks which response tokens are trained: 1 for a sampled token, 0 for one the chat
	// template added between an episode's completions (an observation) and for every token of an inert
	// padding copy; same length as ResponseIDs. Empty (and absent in version 1 rows) means every response
	// token is trained. Schema version 2.
	LossMask []int8 `parquet:"loss_mask,list"`
	// Pad is true for an inert copy that fills a short global batch (grpo.mix_roles): advantage 0, every
	// loss_mask 0, counted in the batch's sample-mean denominator only. Schema version 2.
	Pad bool `parquet:"pad"`
}

// GRPOBatchesSpec describes the grpo_batches table. Version 2 added loss_mask and pad; version 1 rows
// read with an empty loss_mask (every token trained) and pad false.
var GRPOBatchesSpec = register("grpo_batches", 2, true, GRPOBatchRow{})

// Trained reports whether response token i of the sample is trained (loss_mask, empty = all).
func (r GRPOBatchRow) Trained(i int) bool { return len(r.LossMask) == 0 || r.LossMask[i] != 0 }

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
	if len(r.LossMask) > 0 && len(r.LossMask) != len(r.ResponseIDs) {
		c.fail("loss_mask", "sample %s has %d mask entries for %d response tokens", r.SampleID, len(r.LossMask), len(r.ResponseIDs))
	}
	for i, m := range r.LossMask {
		if m != 0 && m != 1 {
			c.fail("loss_mask", "sample %s: entry %d is %d, want 0 or 1", r.SampleID, i, m)
			break
		}
	}
	if r.Pad && r.Advantage != 0 {
		c.fail("advantage", "padding sample %s has advantage %g, want 0", r.SampleID, r.Advantage)
	}
	c.finite("advantage", r.Advantage)
	c.finite("is_weight", r.ISWeight)
	return c.err
}
