package schemas

// PoolFormat is the layout a pool's programs were imported from (`spade pool import --format`).
type PoolFormat string

const (
	// PoolFiles is programs as files: .py files (FILE.hint beside), Parquet or JSONL with a code column.
	PoolFiles PoolFormat = "files"
	// PoolGPT55 is the authors' static GPT-5.5 pool as their download script lays it out: games/game_*.py,
	// manifest.jsonl, validation_manifest.jsonl, validation_summary.json, checksums.sha256.
	PoolGPT55 PoolFormat = "gpt55"
	// PoolRLVE is RLVE's environments (a checkout of its Gym package), each wrapped as a single-turn env
	// program whose difficulty level the run keeps in rlve_levels.
	PoolRLVE PoolFormat = "rlve"
)

// PoolFormatValues lists the formats.
func PoolFormatValues() []PoolFormat { return []PoolFormat{PoolFiles, PoolGPT55, PoolRLVE} }

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
	// Format is the layout the program was imported from (files, gpt55 or rlve). Schema version 2;
	// version 1 rows read "" (files).
	Format PoolFormat `parquet:"format"`
	// Name is the program's name in its source: gpt55, the manifest's original file name (else its
	// game id); rlve, the environment's RLVE identifier (what the RLVE pool's difficulty levels are kept
	// under); empty for files. Version 2.
	Name string `parquet:"name"`
	// Validated is true when the input's own validation record lists the program as validated (gpt55:
	// validation_manifest.jsonl); false where it says otherwise or the input has none. Every row passed
	// spade's gate either way. Version 2.
	Validated bool `parquet:"validated"`
	// Meta is a JSON object of the input's other fields for the program (gpt55: the manifest entry, e.g.
	// its source run, line and byte counts; rlve: the module paths of the environment and its parameter
	// controller); "" when there are none (query it with DuckDB's json functions). Version 2.
	Meta string `parquet:"meta"`
	// AllowedImports is the import allowlist the static check applied to the program at import (the
	// pool's: the default list plus `spade pool import --allow-import`); empty in version 1 rows, whose
	// programs passed the default list.
	AllowedImports []string `parquet:"allowed_imports,list"`
	// Contract is the shape of the program's step as the import's gate saw it (gymnasium or legacy;
	// envs.contract of the envs drawn from it); empty in version 1 rows.
	Contract EnvContract `parquet:"contract"`
}

// PoolsSpec describes the pools table. Version 2 added format, name, validated, meta, allowed_imports
// and contract; version 1 rows read with them empty.
var PoolsSpec = register("pools", 2, false, PoolRow{})

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
	if r.Format != "" {
		enum(&c, "format", r.Format, PoolFormatValues())
	}
	if r.Contract != "" {
		enum(&c, "contract", r.Contract, EnvContractValues())
	}
	if r.Format == PoolRLVE && r.Name == "" {
		c.fail("name", "required for an rlve program (its RLVE identifier)")
	}
	c.utf8("meta", r.Meta)
	return c.err
}
