package schemas

// SampleRow is one slot of a pool refresh: which skill it designs for and which corpus document seeds it
// (table `samples`, partitioned by the refresh step).
type SampleRow struct {
	// Step is the refresh step (the pool step) this slot belongs to.
	Step int64 `parquet:"step"`
	// Slot numbers the slots of the refresh, 0 .. sample.envs_per_step-1.
	Slot int32 `parquet:"slot"`
	// Skill is one of the six games skills, or tool_use.
	Skill string `parquet:"skill"`
	// Setting is games or tools.
	Setting Setting `parquet:"setting"`
	// DocID is the corpus document drawn for the slot; empty under ablation.no_corpus.
	DocID string `parquet:"doc_id"`
	// Excerpt is the part of the document shown to the Designer (cut to the prompt budget).
	Excerpt string `parquet:"excerpt"`
	// Reused is true when the corpus was exhausted and the document had been used before in the run.
	Reused bool `parquet:"reused"`
}

// SamplesSpec describes the samples table.
var SamplesSpec = register("samples", 1, true, SampleRow{})

// Validate implements Row.
func (r SampleRow) Validate() error {
	c := checks{table: "samples"}
	c.nonNegative("step", r.Step)
	c.nonNegative("slot", int64(r.Slot))
	c.oneOf("skill", r.Skill, allSkills...)
	enum(&c, "setting", r.Setting, SettingValues())
	c.utf8("excerpt", r.Excerpt)
	return c.err
}
