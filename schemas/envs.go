package schemas

// EnvRow is one accepted environment of a pool (table `envs`, partitioned by the pool step).
type EnvRow struct {
	// Step is the pool step (equal to PoolStep; kept for the common `step` convention).
	Step int64 `parquet:"step"`
	// PoolStep is the refresh step at which the pool was generated.
	PoolStep int64 `parquet:"pool_step"`
	// Slot is the sample slot the env fills.
	Slot int32 `parquet:"slot"`
	// EnvID is the accepted candidate's env_id.
	EnvID string `parquet:"env_id"`
	// Attempt is the attempt that passed the gate.
	Attempt int32 `parquet:"attempt"`
	// Skill is the slot's skill.
	Skill string `parquet:"skill"`
	// Setting is games or tools.
	Setting Setting `parquet:"setting"`
	// ClassName is the environment class defined by the program.
	ClassName string `parquet:"class_name"`
	// Code is the environment program.
	Code string `parquet:"code"`
	// Hint is the privileged hint: the Designer's (generate.hint_mode = inline) or the hint writer's
	// (separate); empty when the hint call failed after retries (its llm_calls row, role hint, says why).
	Hint string `parquet:"hint"`
	// CodeSHA256 is the lowercase hex sha256 of Code.
	CodeSHA256 string `parquet:"code_sha256"`
	// DocID is the corpus document the Designer saw (empty under ablation.no_corpus).
	DocID string `parquet:"doc_id"`
	// CallID references the Designer's generating llm_calls row.
	CallID string `parquet:"call_id"`
	// MemoryRefs lists the env_ids of the memory entries shown in the Designer's prompt.
	MemoryRefs []string `parquet:"memory_refs,list"`
	// Contract is the shape of the program's step as the gate saw it: gymnasium (the 5-tuple
	// (observation, reward, terminated, truncated, info)) or legacy (the old 4-tuple (observation,
	// reward, done, info)); for an env drawn from an imported pool, the import's gate's (pools.contract);
	// empty when no gate stepped it (a pool imported before pools version 2) and in rows of schema
	// version 1.
	Contract EnvContract `parquet:"contract"`
}

// EnvsSpec describes the envs table. Version 2 added contract; version 1 rows read "" there.
var EnvsSpec = register("envs", 2, true, EnvRow{})

// Validate implements Row.
func (r EnvRow) Validate() error {
	c := checks{table: "envs"}
	c.nonNegative("pool_step", r.PoolStep)
	c.required("env_id", r.EnvID)
	c.required("code", r.Code)
	c.oneOf("skill", r.Skill, allSkills...)
	enum(&c, "setting", r.Setting, SettingValues())
	if r.Contract != "" {
		enum(&c, "contract", r.Contract, EnvContractValues())
	}
	if len(r.CodeSHA256) != 64 {
		c.fail("code_sha256", "must be 64 hex characters, got %d", len(r.CodeSHA256))
	}
	return c.err
}
