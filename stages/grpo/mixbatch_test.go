package grpo

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/rollout"
)

// playRows returns the Agent samples of envs envs with plays plays each and turns samples per play, in
// play order (env, play, turn), sample ids "e<env>p<play>t<turn>"; skip leaves out every play of the
// listed envs (an env whose plays all failed).
func playRows(envs, plays, turns int, skip ...int) []schemas.GRPOBatchRow {
	var out []schemas.GRPOBatchRow
	for e := 1; e <= envs; e++ {
		if slices.Contains(skip, e) {
			continue
		}
		for p := range plays {
			for tn := range turns {
				out = append(out, schemas.GRPOBatchRow{Role: schemas.RoleAgent, EnvID: fmt.Sprintf("e%d", e),
					EpisodeID: fmt.Sprintf("e%dp%d", e, p), SampleID: fmt.Sprintf("e%dp%dt%d", e, p, tn),
					PromptIDs: []int32{1}, ResponseIDs: []int32{2}, OldLogprobs: []float32{-1}, LossMask: []int8{1},
					Advantage: float64(p%3) - 1, ISWeight: 1})
			}
		}
	}
	return out
}

func designerSampleRows(n int) []schemas.GRPOBatchRow {
	out := make([]schemas.GRPOBatchRow, n)
	for i := range out {
		out[i] = schemas.GRPOBatchRow{Role: schemas.RoleDesigner, EnvID: fmt.Sprintf("d%d", i), SampleID: fmt.Sprintf("d%d", i),
			PromptIDs: []int32{1}, ResponseIDs: []int32{2}, OldLogprobs: []float32{-1}, LossMask: []int8{1}, Advantage: 0.5, ISWeight: 1}
	}
	return out
}

func ids(rows []schemas.GRPOBatchRow) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = r.SampleID
	}
	return out
}

// TestMixBatchAsTheAuthors: the presets' batch (grpo.batch_fill duplicate, grpo.batch_cut tail, global
// batch 192) for pools of 24, 20 and 13 accepted envs, each playing ⌈192 / n⌉ plays, hand-computed:
//
//   - 24 envs × 8 = 192: the batch is the plays in order, nothing duplicated or cut;
//   - 24 × 8 with the 24 Designer samples: 216, the tail's 24 Agent samples cut, the whole groups of e22,
//     e23 and e24;
//   - 20 × 10 = 200: 8 cut, e20's plays 2 to 9 (the cut is by sample at the tail, so it can split a group);
//   - 13 × 15 = 195: 3 cut, e13's plays 12, 13, 14;
//   - 13 × 15 with e3's 15 plays failed: 180, 12 plays duplicated, e1's plays 0 to 11, in that order,
//     appended after the real ones with their advantages;
//   - per-turn samples (2 turns a play, 4 plays, batch 12, 2 Designer samples): 10 plays wanted, plays
//     0, 1, 2, 3, 0, 1 copied (12 rows), the batch cut to 12 = Designer, 8 real, play 0's first copy;
//   - no Agent sample and 5 Designer samples in a batch of 8: nothing to duplicate, 3 inert pads.
func TestMixBatchAsTheAuthors(t *testing.T) {
	cfg := config.Default()
	if cfg.GRPO.BatchFill != config.FillDuplicate || cfg.GRPO.BatchCut != config.CutTail || cfg.GRPO.GlobalBatch != 192 {
		t.Fatalf("preset batch: fill %s cut %s global %d, want duplicate, tail, 192", cfg.GRPO.BatchFill, cfg.GRPO.BatchCut, cfg.GRPO.GlobalBatch)
	}
	opts := func(batch int) MixOptions {
		return MixOptions{GlobalBatch: batch, Seed: 1, Step: 5, ScaleShort: true, Fill: config.FillDuplicate, Cut: config.CutTail}
	}
	plays := func(envs int) int { return rollout.UnhintedPlays(192, envs) }
	for _, tc := range []struct {
		name                   string
		agent, designer        []schemas.GRPOBatchRow
		batch                  int
		trimmed, dup, pad      int
		cut, duplicatedSources []string
	}{
		{name: "24 envs", agent: playRows(24, plays(24), 1), batch: 192},
		{name: "24 envs and the Designer", agent: playRows(24, plays(24), 1), designer: designerSampleRows(24), batch: 192, trimmed: 24,
			cut: groupIDs([]int{22, 23, 24}, 0, 8)},
		{name: "20 envs", agent: playRows(20, plays(20), 1), batch: 192, trimmed: 8, cut: groupIDs([]int{20}, 2, 10)},
		{name: "13 envs", agent: playRows(13, plays(13), 1), batch: 192, trimmed: 3, cut: groupIDs([]int{13}, 12, 15)},
		{name: "13 envs, one failed", agent: playRows(13, plays(13), 1, 3), batch: 192, dup: 12,
			duplicatedSources: groupIDs([]int{1}, 0, 12)},
		{name: "per-turn samples", agent: playRows(1, 4, 2), designer: designerSampleRows(2), batch: 12, trimmed: 10, dup: 12,
			duplicatedSources: []string{"e1p0t0", "e1p0t1", "e1p1t0", "e1p1t1", "e1p2t0", "e1p2t1", "e1p3t0", "e1p3t1", "e1p0t0", "e1p0t1", "e1p1t0", "e1p1t1"}},
		{name: "no Agent sample", designer: designerSampleRows(5), batch: 8, pad: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := MixBatch(tc.agent, tc.designer, opts(tc.batch))
			if len(m.Rows) != tc.batch || m.Trimmed != tc.trimmed || m.Duplicated != tc.dup || m.Padded != tc.pad {
				t.Fatalf("%d rows, trimmed %d, duplicated %d, padded %d; want %d, %d, %d, %d", len(m.Rows), m.Trimmed, m.Duplicated, m.Padded,
					tc.batch, tc.trimmed, tc.dup, tc.pad)
			}
			all := append(append(append([]schemas.GRPOBatchRow(nil), tc.designer...), tc.agent...), DuplicatePlays(tc.agent, tc.batch-len(tc.designer))...)
			kept := ids(m.Rows[:m.Real])
			if want := ids(all)[:min(len(all), tc.batch)]; !slices.Equal(kept, want) {
				t.Errorf("batch order %v..., want Designer, then Agent in play order, then duplicates: %v...", kept[:min(6, len(kept))], want[:min(6, len(want))])
			}
			var cut []string
			for _, id := range ids(all) {
				if !slices.Contains(kept, id) {
					cut = append(cut, id)
				}
			}
			if tc.cut != nil && !slices.Equal(cut, tc.cut) {
				t.Errorf("cut %v, want %v", cut, tc.cut)
			}
			var sources []string
			for i, r := range all[len(tc.designer)+len(tc.agent):] {
				if r.SampleID[:3] != "dup" {
					t.Errorf("copy %d: sample id %q, want dup<k>/…", i, r.SampleID)
				}
				_, src, _ := strings.Cut(r.SampleID, "/")
				sources = append(sources, src)
				orig := tc.agent[slices.IndexFunc(tc.agent, func(a schemas.GRPOBatchRow) bool { return a.SampleID == src })]
				if r.Advantage != orig.Advantage || r.EpisodeID != orig.EpisodeID {
					t.Errorf("copy %s: advantage %v episode %s, want its play's %v %s", r.SampleID, r.Advantage, r.EpisodeID, orig.Advantage, orig.EpisodeID)
				}
			}
			if tc.duplicatedSources != nil && !slices.Equal(sources, tc.duplicatedSources) {
				t.Errorf("duplicated %v, want %v", sources, tc.duplicatedSources)
			}
			if m.AdvantageScale != 1 && tc.pad == 0 {
				t.Errorf("a full batch scaled its advantages by %v", m.AdvantageScale)
			}
		})
	}
}

// groupIDs lists the sample ids of plays from..to−1 of each env (one sample per play).
func groupIDs(envs []int, from, to int) []string {
	var out []string
	for _, e := range envs {
		for p := from; p < to; p++ {
			out = append(out, fmt.Sprintf("e%dp%dt0", e, p))
		}
	}
	return out
}

// TestMixBatchKeepsTheOldFillAndCut: grpo.batch_fill pad and grpo.batch_cut random are spade's earlier
// batch, AssignMixedBatch's: a short batch gets inert copies only, an overfull one sheds a seeded random
// choice of Agent samples.
func TestMixBatchKeepsTheOldFillAndCut(t *testing.T) {
	agent := playRows(13, 14, 1) // 182 plays, 10 short of 192
	m := MixBatch(agent, nil, MixOptions{GlobalBatch: 192, Seed: 7, Step: 3, ScaleShort: true, Fill: config.FillPad, Cut: config.CutRandom})
	if m.Duplicated != 0 || m.Padded != 10 || m.Real != 182 {
		t.Errorf("pad fill: real %d duplicated %d padded %d, want 182, 0, 10", m.Real, m.Duplicated, m.Padded)
	}
	over := MixBatch(playRows(20, 10, 1), nil, MixOptions{GlobalBatch: 192, Seed: 7, Step: 3, Fill: config.FillPad, Cut: config.CutRandom})
	old := AssignMixedBatch(playRows(20, 10, 1), nil, 192, 7, 3, false)
	if !slices.Equal(ids(over.Rows), ids(old.Rows)) || over.Trimmed != 8 {
		t.Errorf("random cut differs from AssignMixedBatch's, or trimmed %d, want 8", over.Trimmed)
	}
	if slices.Equal(ids(over.Rows), ids(playRows(20, 10, 1))[:192]) {
		t.Errorf("random cut kept the play order")
	}
}
