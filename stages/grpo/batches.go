package grpo

import (
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
