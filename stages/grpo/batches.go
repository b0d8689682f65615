package grpo

import (
	"fmt"
	"math/rand/v2"

	"github.com/spadekit/spade/schemas"
)

// AssignBatches returns the step's samples in training order with Step and Batch set: the agent samples
// shuffled and cut into global batches of at most globalBatch samples, then the designer samples shuffled
// and cut the same way starting at the next batch number, so no batch mixes roles (each role's loss has
// its own advantage scale). The shuffle is a PCG stream seeded by (seed, step), so a re-run writes the same
// batches. globalBatch < 1 means one batch per role.
func AssignBatches(agent, designer []schemas.GRPOBatchRow, globalBatch int, seed, step int64) []schemas.GRPOBatchRow {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(step)))
	out := make([]schemas.GRPOBatchRow, 0, len(agent)+len(designer))
	batch := int32(0)
	for _, samples := range [][]schemas.GRPOBatchRow{agent, designer} {
		if len(samples) == 0 {
			continue
		}
		order := rng.Perm(len(samples))
		size := globalBatch
		if size < 1 {
			size = len(samples)
		}
		for i, j := range order {
			r := samples[j]
			r.Step, r.Batch = step, batch+int32(i/size)
			out = append(out, r)
		}
		batch += int32((len(samples) + size - 1) / size)
	}
	return out
}

// MixedBatch is what AssignMixedBatch did to the step's samples.
type MixedBatch struct {
	// Rows are the batch in training order: Designer samples, Agent samples, then padding.
	Rows []schemas.GRPOBatchRow
	// Real counts the samples that train; Trimmed the Agent (or Designer) samples cut off past the
	// global batch; Padded the inert copies added.
	Real, Trimmed, Padded int
	// AdvantageScale multiplied every real advantage (global_batch / Real for a short batch; 1 otherwise).
	AdvantageScale float64
}

// AssignMixedBatch returns the step's one global batch (grpo.mix_roles; the authors' batch): the Designer
// samples first, then the Agent samples in a seeded shuffle (a PCG stream of (seed, step), as
// AssignBatches), cut to globalBatch, so a surplus sheds Agent samples and never the Designer's. All rows
// get Batch 0: one optimizer step per rollout step, both roles in it.
//
// A short batch (0 < Real < globalBatch) is filled with inert copies (PadSample) up to globalBatch, so the
// trainer's sum of sample means is still divided by globalBatch (slime's sum_of_sample_mean); with
// scaleShort the real advantages are multiplied by globalBatch / Real, which restores the loss of the
// real samples' mean. The authors scale only when nothing else enters the loss (no KL term), since the
// scaling cannot restore a term that does not carry the advantage: the caller passes scaleShort =
// (grpo.kl_beta == 0). No real sample gives an empty batch (nothing to copy).
func AssignMixedBatch(agent, designer []schemas.GRPOBatchRow, globalBatch int, seed, step int64, scaleShort bool) MixedBatch {
	rng := rand.New(rand.NewPCG(uint64(seed), uint64(step)))
	res := MixedBatch{AdvantageScale: 1}
	all := make([]schemas.GRPOBatchRow, 0, len(agent)+len(designer))
	all = append(all, designer...)
	for _, j := range rng.Perm(len(agent)) {
		all = append(all, agent[j])
	}
	if globalBatch < 1 {
		globalBatch = len(all)
	}
	if len(all) > globalBatch {
		res.Trimmed = len(all) - globalBatch
		all = all[:globalBatch]
	}
	res.Real = len(all)
	if res.Real == 0 {
		return res
	}
	if res.Real < globalBatch && scaleShort {
		res.AdvantageScale = float64(globalBatch) / float64(res.Real)
	}
	for i := range all {
		all[i].Step, all[i].Batch = step, 0
		all[i].Advantage *= res.AdvantageScale
	}
	for i := 0; res.Real+i < globalBatch; i++ {
		all = append(all, PadSample(all[i%res.Real], i, step))
		res.Padded++
	}
	res.Rows = all
	return res
}

// PadSample returns an inert copy of real for a short global batch: same role and env, advantage 0 and
// loss_mask 0 on its one response token, so it contributes no gradient (not even through the KL term)
// but counts as one sample in the batch's sample-mean denominator. The copy keeps only real's first prompt
// and response token: the gradient is zero either way, and a full copy of a 32k-token episode would cost a
// forward and a backward pass for nothing.
func PadSample(real schemas.GRPOBatchRow, index int, step int64) schemas.GRPOBatchRow {
	return schemas.GRPOBatchRow{Step: step, Role: real.Role, Batch: 0, SampleID: fmt.Sprintf("pad%d/%s", index, real.SampleID),
		EpisodeID: real.EpisodeID, EnvID: real.EnvID, PromptIDs: []int32{real.PromptIDs[0]}, ResponseIDs: []int32{real.ResponseIDs[0]},
		OldLogprobs: []float32{real.OldLogprobs[0]}, LossMask: []int8{0}, Advantage: 0, ISWeight: 1, ISCap: real.ISCap, Pad: true}
}
