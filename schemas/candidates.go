package schemas

// CandidateRow is one Designer attempt for a slot: the parsed environment program and hint (table
// `candidates`, partitioned by the pool step). Attempts after the first carry the gate's previous error.
type CandidateRow struct {
	// Step is the pool step.
	Step int64 `parquet:"step"`
	// Slot is the sample slot the candidate fills.
	Slot int32 `parquet:"slot"`
	// EnvID identifies the environment: stable across attempts of a slot is NOT assumed; each attempt gets
	// its own id, derived from run, step, slot and attempt.
	EnvID string `parquet:"env_id"`
	// Attempt counts from 1 to gate.max_attempts.
	Attempt int32 `parquet:"attempt"`
	// Skill is the slot's skill.
	Skill string `parquet:"skill"`
	// Setting is games or tools.
	Setting Setting `parquet:"setting"`
	// DocID is the corpus document of the attempt's prompt: the slot's, or under generate.regen =
	// resample a fresh one per regenerated attempt (empty under ablation.no_corpus).
	DocID string `parquet:"doc_id"`
	// Code is the Python program parsed from the response; empty when parsing failed.
	Code string `parquet:"code"`
	// Hint is the privileged hint parsed from the response; empty when parsing failed, and always under
	// generate.hint_mode = separate (the gate has the hint written after acceptance, into envs.hint).
	Hint string `parquet:"hint"`
	// RawResponse is the Designer's whole answer text.
	RawResponse string `parquet:"raw_response"`
	// ParseError says why the response could not be parsed; empty when it was.
	ParseError string `parquet:"parse_error"`
	// PreviousError is the gate error handed back to the Designer for this attempt; empty on attempt 1.
	PreviousError string `parquet:"previous_error"`
	// CallID references the llm_calls row of the generating call.
	CallID string `parquet:"call_id"`
	// MemoryRefs lists the env_ids of the memory entries shown in the Designer's prompt (seeds first);
	// empty under ablation.no_memory or with an empty memory. The gate copies it to envs.memory_refs.
	MemoryRefs []string `parquet:"memory_refs,list"`
}

// CandidatesSpec describes the candidates table.
var CandidatesSpec = register("candidates", 1, true, CandidateRow{})

// Validate implements Row.
func (r CandidateRow) Validate() error {
	c := checks{table: "candidates"}
	c.nonNegative("step", r.Step)
	c.nonNegative("slot", int64(r.Slot))
	c.required("env_id", r.EnvID)
	if r.Attempt < 1 {
		c.fail("attempt", "must be >= 1, got %d", r.Attempt)
	}
	c.oneOf("skill", r.Skill, allSkills...)
	enum(&c, "setting", r.Setting, SettingValues())
	c.utf8("code", r.Code)
	c.utf8("hint", r.Hint)
	c.utf8("raw_response", r.RawResponse)
	if r.Code == "" && r.ParseError == "" {
		c.fail("parse_error", "required when code is empty")
	}
	return c.err
}
