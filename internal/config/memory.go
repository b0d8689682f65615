package config

// Memory configures the FIFO environment memory (SPADE §2.4): the scored envs the regret stage keeps
// (stages/regret) and the ones a Designer prompt shows as examples to build on or to avoid
// (stages/generate.ChooseMemory).
type Memory struct {
	// Capacity is the most entries the FIFO memory keeps; 0 keeps none. The oldest entry is evicted first
	// (the authors' --spade-env-memory-max-size, 200).
	Capacity int `json:"capacity" range:">=0"`
	// Seeds is the number of seed envs (good examples) a Designer prompt shows.
	Seeds int `json:"seeds" range:">=0"`
	// Examples is the number of too_easy and of too_hard envs a prompt shows under memory.seed_pool 0.
	// They are of the slot's skill; the authors' rule (seed_pool > 0) shows memory.negatives instead.
	Examples int `json:"examples" range:">=0"`
	// SeedPool is the size of the pool the seeds are drawn from; 0 picks spade's rule instead. Above 0
	// (the authors' rule) memory.seeds seeds are drawn at random from the top max(seed_pool, 3 × seeds)
	// entries of the slot's skill by regret with a solve rate in [0.15, 0.85], then memory.negatives
	// negatives; spade's rule shows the seed-labelled entries by regret, the slot's skill first, and
	// memory.examples too_easy and too_hard entries.
	SeedPool int `json:"seed_pool" range:">=0"`
	// CodeChars cuts a shown program to this many characters (runes). 0 shows it whole under the authors'
	// rule and cuts it at 6,000 bytes under spade's.
	CodeChars int `json:"code_chars" range:">=0"`
	// ShowHint shows a memory env's hint beside its program in the prompt.
	ShowHint bool `json:"show_hint"`
	// Negatives is the number of envs to avoid a prompt shows under the authors' rule (seed_pool > 0).
	// They are drawn among the slot's skill's envs solved above 0.9 (too easy) or below 0.1 (too hard).
	Negatives int `json:"negatives" range:">=0"`
	// NegativesCode shows a negative's program; off, a negative shows its class name only.
	NegativesCode bool `json:"negatives_code"`
	// WrittenAt is when the regret stage adds a pool's envs to the memory: pool_start or pool_end.
	// pool_start writes them at the pool's first step from that step's plays: the win rate is the share
	// of unhinted plays with an outcome above 0 and the regret that step's hinted minus unhinted mean (the
	// authors'); pool_end writes them at the pool's last step from its whole window, with the solve rate.
	WrittenAt MemoryWrittenAt `json:"written_at"`
	// NegativeName is how a negative shown by name only is named: class or file_stem. class is the
	// program's class; file_stem is the name the authors' loader gave its file,
	// game_<pool step, 5 digits>_<slot, 3 digits>_<skill in lower case, spaces as _>.
	NegativeName NegativeName `json:"negative_name"`
}

// MemoryWrittenAt is memory.written_at: the step at which a pool's envs join the memory.
type MemoryWrittenAt string

// The steps at which memory is written.
const (
	// MemoryAtPoolStart writes at the pool's first step, from its plays (the authors').
	MemoryAtPoolStart MemoryWrittenAt = "pool_start"
	// MemoryAtPoolEnd writes at the pool's last step, from its window.
	MemoryAtPoolEnd MemoryWrittenAt = "pool_end"
)

// MemoryWrittenAtValues lists every memory.written_at.
func MemoryWrittenAtValues() []MemoryWrittenAt {
	return []MemoryWrittenAt{MemoryAtPoolStart, MemoryAtPoolEnd}
}

// NegativeName is memory.negative_name: how a negative shown without its program is named.
type NegativeName string

// The names of a negative.
const (
	// NegativeByClass names it by its program's class.
	NegativeByClass NegativeName = "class"
	// NegativeByFileStem names it by the authors' file stem (the authors').
	NegativeByFileStem NegativeName = "file_stem"
)

// NegativeNameValues lists every memory.negative_name.
func NegativeNameValues() []NegativeName { return []NegativeName{NegativeByClass, NegativeByFileStem} }

func init() {
	registerEnum(MemoryWrittenAtValues())
	registerEnum(NegativeNameValues())
}

// validate has no rule beyond the declared ranges.
func (Memory) validate(*Config) error { return nil }

// presetMemory is the authors' env memory: 200 entries, 2 seeds drawn from the top 10 with programs cut
// at 2,000 characters and no hints, 1 negative shown by its file's name, written at the pool's first step.
func presetMemory(presetSpec) Memory {
	return Memory{Capacity: 200, Seeds: 2, Examples: 2, SeedPool: 10, CodeChars: 2000, ShowHint: false, Negatives: 1,
		NegativesCode: false, WrittenAt: MemoryAtPoolStart, NegativeName: NegativeByFileStem}
}
