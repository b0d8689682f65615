package grpo

import (
	"fmt"
	"math/rand/v2"

	"github.com/spadekit/spade/internal/config"
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

// MixedBatch is what MixBatch did to the step's samples.
type MixedBatch struct {
	// Rows are the batch in training order: Designer samples, Agent samples, duplicates, then padding.
	Rows []schemas.GRPOBatchRow
	// Real counts the samples that train (duplicates included); Trimmed the samples cut off past the
	// global batch; Duplicated the copies of real Agent samples added (grpo.batch_fill duplicate); Padded
	// the inert copies added.
	Real, Trimmed, Duplicated, Padded int
	// AdvantageScale multiplied every real advantage (global_batch / Real for a short batch; 1 otherwise).
	AdvantageScale float64
}

// MixOptions are the settings of one step's mixed global batch (grpo.mix_roles).
type MixOptions struct {
	// GlobalBatch is grpo.global_batch; < 1 takes every sample.
	GlobalBatch int
	// Seed and Step seed the shuffle of Cut random: a PCG stream of (Seed, Step).
	Seed, Step int64
	// ScaleShort multiplies the real advantages of a batch still short after filling by
	// GlobalBatch / Real (the caller passes grpo.kl_beta == 0).
	ScaleShort bool
	// Fill is grpo.batch_fill and Cut grpo.batch_cut.
	Fill config.BatchFill
	Cut  config.BatchCut
}

// AssignMixedBatch returns the step's one global batch with the pad fill and the random cut (MixBatch
// with grpo.batch_fill pad and grpo.batch_cut random, spade's earlier batch).
func AssignMixedBatch(agent, designer []schemas.GRPOBatchRow, globalBatch int, seed, step int64, scaleShort bool) MixedBatch {
	return MixBatch(agent, designer, MixOptions{GlobalBatch: globalBatch, Seed: seed, Step: step, ScaleShort: scaleShort,
		Fill: config.FillPad, Cut: config.CutRandom})
}

// MixBatch returns the step's one global batch (grpo.mix_roles; the authors' batch), all rows with Batch 0:
// one optimizer step per rollout step, both roles in it. The rows are the Designer samples first, then the
// Agent samples: in the order given (play order: env, play, turn) under Cut tail, in a seeded shuffle under
// Cut random.
//
// Under Fill duplicate, when the Agent's plays (distinct episode ids) number fewer than GlobalBatch minus
// the Designer samples, whole plays are copied in play order, the first play first and round again if
// needed, until they reach it; the copies come after the Agent samples, keep their advantage and get the
// sample id "dup<k>/<id>" (k counts the copied plays). The batch is then cut to GlobalBatch at its tail, so
// a surplus sheds the last Agent samples (duplicates first) and never the Designer's.
//
// A batch still short (0 < Real < GlobalBatch: Fill pad, or no Agent play to copy) is filled with inert
// copies (PadSample) up to GlobalBatch, so the trainer's sum of sample means is still divided by
// GlobalBatch (slime's sum_of_sample_mean); with ScaleShort the real advantages are multiplied by
// GlobalBatch / Real, which restores the loss of the real samples' mean. The authors scale only when
// nothing else enters the loss (no KL term), since the scaling cannot restore a term that does not carry
// the advantage. No real sample gives an empty batch (nothing to copy).
func MixBatch(agent, designer []schemas.GRPOBatchRow, o MixOptions) MixedBatch {
	res := MixedBatch{AdvantageScale: 1}
	globalBatch := o.GlobalBatch
	all := make([]schemas.GRPOBatchRow, 0, len(agent)+len(designer))
	all = append(all, designer...)
	if o.Cut == config.CutRandom {
		rng := rand.New(rand.NewPCG(uint64(o.Seed), uint64(o.Step)))
		for _, j := range rng.Perm(len(agent)) {
			all = append(all, agent[j])
		}
	} else {
		all = append(all, agent...)
	}
	if o.Fill == config.FillDuplicate && globalBatch >= 1 {
		dups := DuplicatePlays(agent, globalBatch-len(designer))
		res.Duplicated = len(dups)
		all = append(all, dups...)
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
	if res.Real < globalBatch && o.ScaleShort {
		res.AdvantageScale = float64(globalBatch) / float64(res.Real)
	}
	for i := range all {
		all[i].Step, all[i].Batch = o.Step, 0
		all[i].Advantage *= res.AdvantageScale
	}
	for i := 0; res.Real+i < globalBatch; i++ {
		all = append(all, PadSample(all[i%res.Real], i, o.Step))
		res.Padded++
	}
	res.Rows = all
	return res
}

// DuplicatePlays returns the copies that bring agent's plays (its rows grouped by episode id, in order of
// first appearance) up to plays: play k mod n for k = 0, 1, … until n + k = plays, each copy every row of
// its play with the sample id "dup<k>/<id>", advantage and tokens unchanged. None when agent has no play
// or already plays enough.
func DuplicatePlays(agent []schemas.GRPOBatchRow, plays int) []schemas.GRPOBatchRow {
	var order []string
	rows := map[string][]schemas.GRPOBatchRow{}
	for _, r := range agent {
		if _, seen := rows[r.EpisodeID]; !seen {
			order = append(order, r.EpisodeID)
		}
		rows[r.EpisodeID] = append(rows[r.EpisodeID], r)
	}
	var out []schemas.GRPOBatchRow
	for k := 0; len(order) > 0 && len(order)+k < plays; k++ {
		for _, r := range rows[order[k%len(order)]] {
			r.SampleID = fmt.Sprintf("dup%d/%s", k, r.SampleID)
			out = append(out, r)
		}
	}
	return out
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
