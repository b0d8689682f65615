package regret

import (
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/schemas"
)

// MemoryLabel labels a scored env for the Designer's memory (SPADE §2.4) against the learnable band
// [lo, hi] (metrics.band_lo, metrics.band_hi):
//
//	too_easy  solve rate > hi
//	too_hard  solve rate < lo and, with the hint, still < lo (the hint does not rescue it)
//	seed      otherwise: learnable without the hint, or brought into reach by the hint (high regret)
//
// Edge case: an env with no hinted episodes has its hinted solve rate equal to its solve rate, so below
// the band it is too_hard.
func MemoryLabel(s EnvScore, lo, hi float64) string {
	switch {
	case s.SolveRate > hi:
		return schemas.LabelTooEasy
	case s.SolveRate < lo && s.HintSolveRate < lo:
		return schemas.LabelTooHard
	}
	return schemas.LabelSeed
}

// PushFIFO appends entries to a FIFO memory of at most capacity entries (memory.capacity), evicting the
// oldest first, and returns the new memory with Position renumbered oldest first (0 is the next to be
// evicted) and Step set to step. The input slices are not modified. Edge cases: capacity <= 0 keeps
// nothing; more entries than capacity keeps the newest capacity of them.
func PushFIFO(memory, entries []schemas.MemoryRow, capacity int, step int64) []schemas.MemoryRow {
	all := make([]schemas.MemoryRow, 0, len(memory)+len(entries))
	all = append(all, memory...)
	all = append(all, entries...)
	if capacity < 0 {
		capacity = 0
	}
	if len(all) > capacity {
		all = all[len(all)-capacity:]
	}
	out := make([]schemas.MemoryRow, len(all))
	for i, r := range all {
		r.Position, r.Step = int32(i), step
		out[i] = r
	}
	return out
}

// WinRate is the share of an env's unhinted plays that won, as the authors' memory records it:
//
//	win rate = |{unhinted counted plays p : outcome(p) > 0}| / |unhinted counted plays|
//
// over the plays rules count, with outcome their outcome.value. No counted unhinted play gives 0.
func WinRate(episodes []schemas.EpisodeRow, rules outcome.Rules) float64 {
	won, plays := 0, 0
	for i := range episodes {
		e := &episodes[i]
		if e.Hinted || !rules.Counts(e) {
			continue
		}
		plays++
		if rules.Of(e) > 0 {
			won++
		}
	}
	if plays == 0 {
		return 0
	}
	return float64(won) / float64(plays)
}
