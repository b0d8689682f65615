package generate

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/schemas"
)

// MemoryEntry is one remembered environment shown to the Designer.
type MemoryEntry struct {
	EnvID     string
	Skill     string
	Regret    float64
	SolveRate float64
	// Code is the program as shown (cut to memory.code_chars); empty when NameOnly.
	Code string
	// Hint is the env's hint; empty when the block hides hints (memory.show_hint = false).
	Hint string
	// ClassName is the program's class (its first top-level class statement); NameOnly shows only it, for
	// a negative under memory.negatives_code = false.
	ClassName string
	NameOnly  bool
}

// MemoryBlock is the memory part of a prompt: seeds to mutate and examples to avoid.
type MemoryBlock struct {
	Seeds   []MemoryEntry
	TooEasy []MemoryEntry
	TooHard []MemoryEntry
	// HideHints leaves the seeds' hints out of the prompt (memory.show_hint = false).
	HideHints bool
	// ByWinRate is set when the negatives were chosen by their solve rate alone (the authors' rule), so a
	// too_hard one is not said to have failed with the hint as well.
	ByWinRate bool
}

// Any reports whether the block shows anything.
func (m MemoryBlock) Any() bool { return len(m.Seeds)+len(m.TooEasy)+len(m.TooHard) > 0 }

// Refs returns the env ids shown, seeds first (the envs.memory_refs column).
func (m MemoryBlock) Refs() []string {
	var refs []string
	for _, group := range [][]MemoryEntry{m.Seeds, m.TooEasy, m.TooHard} {
		for _, e := range group {
			refs = append(refs, e.EnvID)
		}
	}
	return refs
}

// MemoryCodeChars bounds the code of one memory entry in the prompt (bytes) under the label rule
// (memory.seed_pool = 0) with memory.code_chars = 0, so a memory of long programs cannot crowd out the
// budget; a cut program ends with a "# … cut" line.
const MemoryCodeChars = 6000

// The authors' memory bands (their env memory): seeds come from entries whose solve rate is in
// [SeedBandLo, SeedBandHi], negatives are entries solved more often than TooEasyAbove or less often than
// TooHardBelow.
const (
	SeedBandLo, SeedBandHi     = 0.15, 0.85
	TooEasyAbove, TooHardBelow = 0.9, 0.1
)

// MemoryOptions are the memory.* settings of a selection and the draw's seed.
type MemoryOptions struct {
	// Seeds is memory.seeds; Examples is memory.examples (the label rule only).
	Seeds, Examples int
	// SeedPool is memory.seed_pool: 0 picks the label rule (SelectMemory), > 0 the authors' rule.
	SeedPool int
	// CodeChars is memory.code_chars: a shown program is cut to this many characters (runes); 0 shows it
	// whole under the authors' rule and keeps the MemoryCodeChars guard under the label rule.
	CodeChars int
	// ShowHint is memory.show_hint; NegativesCode is memory.negatives_code; Negatives is memory.negatives
	// (the authors' rule only).
	ShowHint, NegativesCode bool
	Negatives               int
	// RunSeed, Step and Slot seed the authors' random draw, so a slot's memory is reproducible and the slots
	// of one skill do not all see the same seeds.
	RunSeed, Step int64
	Slot          int32
	// Names, when set, names each entry (by env id) in place of its program's class: the file stems of
	// memory.negative_name file_stem.
	Names map[string]string
}

// MemoryOptionsFrom reads the memory.* settings of a run for one slot of a refresh step.
func MemoryOptionsFrom(cfg *config.Config, step int64, slot int32) MemoryOptions {
	m := cfg.Memory
	return MemoryOptions{Seeds: m.Seeds, Examples: m.Examples, SeedPool: m.SeedPool, CodeChars: m.CodeChars,
		ShowHint: m.ShowHint, NegativesCode: m.NegativesCode, Negatives: m.Negatives, RunSeed: cfg.Seed, Step: step, Slot: slot}
}

// ChooseMemory picks the memory shown to one slot of skill from the newest snapshot, by memory.seed_pool:
//
//   - seed_pool = 0, the label rule (SelectMemory): up to Seeds entries labelled seed, highest regret first
//     (the slot's skill before others), and up to Examples too_easy and Examples too_hard entries of the
//     skill. It cannot be written with the other keys (it falls back to other skills, is not random, and
//     reads the labels), so it stays the behaviour of seed_pool 0; memory.negatives is not used by it.
//   - seed_pool > 0, the authors' rule: Seeds seeds of the skill drawn at random (seeded by RunSeed, Step
//     and Slot) from the top max(SeedPool, 3 × Seeds) by regret (newer first on ties) among the skill's
//     entries with a solve rate in [0.15, 0.85]; then Negatives negatives of the skill drawn at random
//     among those with a solve rate above 0.9 (too easy) or below 0.1 (too hard). memory.examples is not
//     used by it.
//
// Either way a shown program is cut to CodeChars characters (see MemoryOptions), hints are left out unless
// ShowHint, and a negative shows only its class name unless NegativesCode. An empty memory gives an
// empty block; the memory slice is not modified.
func ChooseMemory(memory []schemas.MemoryRow, skill string, o MemoryOptions) MemoryBlock {
	var block MemoryBlock
	var seeds, easy, hard []schemas.MemoryRow
	if o.SeedPool <= 0 {
		seeds, easy, hard = labelMemory(memory, skill, o.Seeds, o.Examples)
	} else {
		seeds, easy, hard = authorsMemory(memory, skill, o)
		block.ByWinRate = true
	}
	block.HideHints = !o.ShowHint
	show := func(m schemas.MemoryRow, negative bool) MemoryEntry {
		e := MemoryEntry{EnvID: m.EnvID, Skill: m.Skill, Regret: m.Regret, SolveRate: m.SolveRate, Hint: m.Hint,
			ClassName: ClassName(m.Code)}
		if name, ok := o.Names[m.EnvID]; ok {
			e.ClassName = name
		}
		switch {
		case o.CodeChars > 0:
			e.Code = cutRunes(m.Code, o.CodeChars)
		case o.SeedPool <= 0:
			e.Code = cutBytes(m.Code, MemoryCodeChars)
		default:
			e.Code = m.Code
		}
		if !o.ShowHint {
			e.Hint = ""
		}
		if negative && !o.NegativesCode {
			e.Code, e.NameOnly = "", true
		}
		return e
	}
	for _, m := range seeds {
		block.Seeds = append(block.Seeds, show(m, false))
	}
	for _, m := range easy {
		block.TooEasy = append(block.TooEasy, show(m, true))
	}
	for _, m := range hard {
		block.TooHard = append(block.TooHard, show(m, true))
	}
	return block
}

// SelectMemory picks the memory shown for a skill from the newest snapshot under the label rule and
// display (ChooseMemory with memory.seed_pool 0, show_hint true, negatives_code true, code_chars 0): up
// to `seeds` entries labelled seed, highest regret first (the slot's skill before others, newer first on
// ties), and up to `examples` too_easy and too_hard entries of the slot's skill, newest first. An empty
// memory gives an empty block.
func SelectMemory(memory []schemas.MemoryRow, skill string, seeds, examples int) MemoryBlock {
	return ChooseMemory(memory, skill, MemoryOptions{Seeds: seeds, Examples: examples, ShowHint: true, NegativesCode: true})
}

// newestFirst returns a copy of memory, newest entry (highest position) first.
func newestFirst(memory []schemas.MemoryRow) []schemas.MemoryRow {
	sorted := append([]schemas.MemoryRow(nil), memory...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Position > sorted[j].Position })
	return sorted
}

// labelMemory is the label rule: it picks entries by their memory label (see ChooseMemory).
func labelMemory(memory []schemas.MemoryRow, skill string, seeds, examples int) (seedRows, easy, hard []schemas.MemoryRow) {
	sorted := newestFirst(memory)
	for _, m := range sorted {
		if m.Label == schemas.LabelSeed {
			seedRows = append(seedRows, m)
		}
	}
	sort.SliceStable(seedRows, func(i, j int) bool {
		si, sj := seedRows[i].Skill == skill, seedRows[j].Skill == skill
		if si != sj {
			return si
		}
		return seedRows[i].Regret > seedRows[j].Regret
	})
	seedRows = seedRows[:min(max(seeds, 0), len(seedRows))]
	for _, m := range sorted {
		if m.Skill != skill {
			continue
		}
		switch {
		case m.Label == schemas.LabelTooEasy && len(easy) < examples:
			easy = append(easy, m)
		case m.Label == schemas.LabelTooHard && len(hard) < examples:
			hard = append(hard, m)
		}
	}
	return seedRows, easy, hard
}

// authorsMemory is the authors' selection rule (see ChooseMemory).
func authorsMemory(memory []schemas.MemoryRow, skill string, o MemoryOptions) (seeds, easy, hard []schemas.MemoryRow) {
	var inBand, negatives []schemas.MemoryRow
	for _, m := range newestFirst(memory) {
		if m.Skill != skill {
			continue
		}
		switch {
		case m.SolveRate >= SeedBandLo && m.SolveRate <= SeedBandHi:
			inBand = append(inBand, m)
		case m.SolveRate > TooEasyAbove || m.SolveRate < TooHardBelow:
			negatives = append(negatives, m)
		}
	}
	sort.SliceStable(inBand, func(i, j int) bool { return inBand[i].Regret > inBand[j].Regret })
	top := inBand[:min(max(o.SeedPool, 3*o.Seeds), len(inBand))]
	rng := memoryRand(o.RunSeed, o.Step, o.Slot)
	seeds = drawWithoutReplacement(rng, top, o.Seeds)
	for _, m := range drawWithoutReplacement(rng, negatives, o.Negatives) {
		if m.SolveRate > TooEasyAbove {
			easy = append(easy, m)
		} else {
			hard = append(hard, m)
		}
	}
	return seeds, easy, hard
}

// memoryRand is the random source of one slot's memory draw, from SHA-256 of the run seed, step and slot.
func memoryRand(runSeed, step int64, slot int32) *rand.Rand {
	sum := sha256.Sum256(fmt.Appendf(nil, "memory\x00%d\x00%d\x00%d", runSeed, step, slot))
	return rand.New(rand.NewPCG(binary.LittleEndian.Uint64(sum[:8]), binary.LittleEndian.Uint64(sum[8:16])))
}

// drawWithoutReplacement returns min(n, len(rows)) distinct rows in the order drawn (a partial
// Fisher–Yates shuffle of a copy).
func drawWithoutReplacement(rng *rand.Rand, rows []schemas.MemoryRow, n int) []schemas.MemoryRow {
	pool := append([]schemas.MemoryRow(nil), rows...)
	n = min(max(n, 0), len(pool))
	for i := 0; i < n; i++ {
		j := i + rng.IntN(len(pool)-i)
		pool[i], pool[j] = pool[j], pool[i]
	}
	return pool[:n]
}

// classPattern finds a top-level class statement.
var classPattern = regexp.MustCompile(`(?m)^class\s+([A-Za-z_][A-Za-z0-9_]*)`)

// ClassName returns the name of the first top-level class of a program (the contract allows exactly
// one), or "" when there is none. Memory rows carry the code but not envs.class_name, so the name is read
// back from the code.
func ClassName(code string) string {
	if m := classPattern.FindStringSubmatch(code); m != nil {
		return m[1]
	}
	return ""
}

// FileStem is the name the authors' loader gave an env's program file (without .py), which their memory
// shows a negative by: game_<pool step, 5 digits>_<slot, 3 digits>_<skill in lower case, spaces as _>.
func FileStem(poolStep int64, slot int32, skill string) string {
	return fmt.Sprintf("game_%05d_%03d_%s", poolStep, slot, strings.ReplaceAll(strings.ToLower(skill), " ", "_"))
}

// cutRunes cuts code to at most limit characters (runes), marking a cut with a "# … cut" line.
func cutRunes(code string, limit int) string {
	count := 0
	for i := range code {
		if count == limit {
			return code[:i] + "\n# … cut"
		}
		count++
	}
	return code
}

// cutBytes cuts code to at most limit bytes at a rune boundary, marking a cut with a "# … cut" line
// (the label rule's MemoryCodeChars guard).
func cutBytes(code string, limit int) string {
	if len(code) <= limit {
		return code
	}
	cut := limit
	for cut > 0 && !isRuneStart(code[cut]) {
		cut--
	}
	return code[:cut] + "\n# … cut"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
