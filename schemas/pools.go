package schemas

// PoolRow is one environment program of an imported static pool (table `pools`, not per run: one
// partition per pool name, like the corpus). `spade pool import` writes only programs that passed the
// gate's checks; a run with sample.pool set takes its envs from here instead of generating them.
type PoolRow struct {
	// EntryID is the program's id, unique within the pool (the input's `id`, or the file's name).
	EntryID string `parquet:"id"`
	// Code is the environment program (Python 3).
	Code string `parquet:"code"`
	// Hint is the privileged hint; may be empty (hinted plays then see none).
	Hint string `parquet:"hint"`
	// Skill is one of the skills, or empty when the input named none (a run then labels the env with
	// the skills of sample.skills in turn).
	Skill string `parquet:"skill"`
	// Setting is games or tools: the checks the program passed.
	Setting Setting `parquet:"setting"`
	// ClassName is the environment class the gate's load check found.
	ClassName string `parquet:"class_name"`
	// CodeSHA256 is the lowercase hex sha256 of Code (joins envs.code_sha256).
	CodeSHA256 string `parquet:"code_sha256"`
	// Source is the input file the program came from.
	Source string `parquet:"source"`
}

// PoolsSpec describes the pools table.
var PoolsSpec = register("pools", 1, false, PoolRow{})

// Validate implements Row.
func (r PoolRow) Validate() error {
	c := checks{table: "pools"}
	c.required("id", r.EntryID)
	c.required("code", r.Code)
	c.utf8("id", r.EntryID)
	c.utf8("code", r.Code)
	c.utf8("hint", r.Hint)
	if r.Skill != "" {
		c.oneOf("skill", r.Skill, allSkills...)
	}
	enum(&c, "setting", r.Setting, SettingValues())
	if len(r.CodeSHA256) != 64 {
		c.fail("code_sha256", "must be 64 hex characters, got %d", len(r.CodeSHA256))
	}
	return c.err
}
