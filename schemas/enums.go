package schemas

// The six skills of the games setting (SPADE §3.1), as stored in `skill` columns.
const (
	SkillMath        = "math_reasoning"
	SkillLogic       = "logical_deduction"
	SkillSpatial     = "spatial_reasoning"
	SkillPattern     = "pattern_recognition"
	SkillOptimize    = "optimization"
	SkillCausal      = "causal_inference"
	SkillToolUse     = "tool_use"
	SettingGames     = "games"
	SettingTools     = "tools"
	RoleDesigner     = "designer"
	RoleAgent        = "agent"
	RoleScreen       = "screen"
	LabelSeed        = "seed"
	LabelTooEasy     = "too_easy"
	LabelTooHard     = "too_hard"
	EndedDone        = "done"
	EndedMaxTurns    = "max_turns"
	EndedEnvError    = "env_error"
	EndedTimeout     = "timeout"
	EndedAgentError  = "agent_error"
	VariantRegretAnc = "regret_anchor"
	VariantRegret    = "regret"
	VariantAnchor    = "anchor"
	VariantEMALP     = "ema_lp"
)

// Skills lists the six games skills in their canonical order (the schedule rotates through this order).
var Skills = []string{SkillMath, SkillLogic, SkillSpatial, SkillPattern, SkillOptimize, SkillCausal}

// allSkills is Skills plus the tool-use skill, for validation.
var allSkills = append(append([]string{}, Skills...), SkillToolUse)

// Variants lists the Designer reward variants stored side by side in designer_rewards.
var Variants = []string{VariantRegretAnc, VariantRegret, VariantAnchor, VariantEMALP}
