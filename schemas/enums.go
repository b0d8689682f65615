package schemas

import (
	"fmt"
	"slices"
	"strings"
)

// The six skills of the games setting (SPADE §3.1), as stored in `skill` columns.
const (
	SkillMath     = "math_reasoning"
	SkillLogic    = "logical_deduction"
	SkillSpatial  = "spatial_reasoning"
	SkillPattern  = "pattern_recognition"
	SkillOptimize = "optimization"
	SkillCausal   = "causal_inference"
	SkillToolUse  = "tool_use"
)

// Memory labels (memory.label).
const (
	LabelSeed    = "seed"
	LabelTooEasy = "too_easy"
	LabelTooHard = "too_hard"
)

// Skills lists the six games skills in their canonical order (the schedule rotates through this order).
var Skills = []string{SkillMath, SkillLogic, SkillSpatial, SkillPattern, SkillOptimize, SkillCausal}

// The six tool skills of the tools setting (the authors' tool-use skills), as stored in `skill` columns:
// under sample.skills listing them, each slot of a tools pool has one, and the Designer writes for it.
const (
	SkillAPIOrchestration   = "api_orchestration"
	SkillDataRetrieval      = "data_retrieval"
	SkillStateModification  = "state_modification"
	SkillErrorRecovery      = "error_recovery"
	SkillToolSelection      = "tool_selection"
	SkillMultiStepWorkflows = "multi_step_workflows"
)

// ToolSkills lists the six tool skills in the authors' order (their --spade-skills).
var ToolSkills = []string{SkillAPIOrchestration, SkillDataRetrieval, SkillStateModification, SkillErrorRecovery,
	SkillToolSelection, SkillMultiStepWorkflows}

// IsToolSkill reports whether skill is the tools setting's: tool_use or one of ToolSkills.
func IsToolSkill(skill string) bool {
	return skill == SkillToolUse || slices.Contains(ToolSkills, skill)
}

// allSkills is Skills plus the tool-use skills, for validation.
var allSkills = append(append(append([]string{}, Skills...), SkillToolUse), ToolSkills...)

// The closed value sets of the lake's enum columns and of the config keys that take them. Each is a typed
// string owned here, with its constants, its values in a fixed order (XxxValues), Valid and ParseXxx, so a
// table, the config and the code agree on one list.

// Setting is the kind of environments a run designs (samples/candidates/envs.setting, config `setting`).
type Setting string

// The settings of SPADE §3.
const (
	// SettingGames is the text-game setting: the Agent answers with <action>…</action>.
	SettingGames Setting = "games"
	// SettingTools is the tool-use setting: the Agent answers with OpenAI tool calls.
	SettingTools Setting = "tools"
)

// SettingValues lists every setting.
func SettingValues() []Setting { return []Setting{SettingGames, SettingTools} }

// Valid reports whether s is a known setting.
func (s Setting) Valid() bool { return slices.Contains(SettingValues(), s) }

// ParseSetting validates a setting name; the error lists the valid ones.
func ParseSetting(name string) (Setting, error) { return parse("setting", name, SettingValues()) }

// Role names the system prompt an LLM call is made under (llm_calls.role, grpo_batches.role,
// train_metrics.role); it selects the role's endpoint and sampling settings.
type Role string

// The roles of SPADE: the Environment Designer, the Reasoning Agent, the LLM screen of tool-use
// environments (SPADE §2.4) and the hint writer (the Designer's model asked, after the gate accepts an
// env, for its privileged hint; generate.hint_mode = separate).
const (
	RoleDesigner Role = "designer"
	RoleAgent    Role = "agent"
	RoleScreen   Role = "screen"
	// RoleHint calls the Designer's endpoint and weights with generate.hint_temperature and
	// generate.hint_max_tokens; its calls are never trained.
	RoleHint Role = "hint"
)

// RoleValues lists every role, in a fixed order.
func RoleValues() []Role { return []Role{RoleDesigner, RoleAgent, RoleScreen, RoleHint} }

// TrainedRoles lists the roles GRPO trains (grpo_batches.role, train_metrics.role): the screen and the
// hint writer are not.
func TrainedRoles() []Role { return []Role{RoleAgent, RoleDesigner} }

// Valid reports whether r is a known role.
func (r Role) Valid() bool { return slices.Contains(RoleValues(), r) }

// ParseRole validates a role name; the error lists the valid ones.
func ParseRole(name string) (Role, error) { return parse("role", name, RoleValues()) }

// Variant names a Designer reward (designer_rewards.variant; config `regret.variant` picks the one GRPO
// trains the Designer on). The formulas live in stages/regret, registered under these names.
type Variant string

// The reward variants, computed side by side for every env (SPADE §2.2, §2.3, §3.5).
const (
	// VariantRegretAnchor is the deployed reward: w_r · max(0, regret) + w_a · anchor.
	VariantRegretAnchor Variant = "regret_anchor"
	// VariantRegret is the hint regret alone, r̄(e|h) − r̄(e), unclipped as in §2.3.
	VariantRegret Variant = "regret"
	// VariantAnchor is the difficulty anchor alone.
	VariantAnchor Variant = "anchor"
	// VariantEMALP is the EMA learning potential, ρ(e) − mean_{E_s} ρ.
	VariantEMALP Variant = "ema_lp"
	// VariantRegretBased is max(0, r̄(e|h) − r̄_window(e)): the hinted mean against every unhinted play of
	// the pool's window, floored at 0. designer_rewards holds its rows only in a run that trains on it.
	VariantRegretBased Variant = "regret_based"
)

// VariantValues lists the variants in their canonical order (the order designer_rewards rows are written in).
func VariantValues() []Variant {
	return []Variant{VariantRegretAnchor, VariantRegret, VariantAnchor, VariantEMALP, VariantRegretBased}
}

// WrittenVariants lists the variants whose designer_rewards rows a run writes, in canonical order: the
// first four always, regret_based only when deployed is regret_based (so the tables of runs that do not
// train on it stay as they were before it existed).
func WrittenVariants(deployed Variant) []Variant {
	if deployed == VariantRegretBased {
		return VariantValues()
	}
	return []Variant{VariantRegretAnchor, VariantRegret, VariantAnchor, VariantEMALP}
}

// Valid reports whether v is a known variant.
func (v Variant) Valid() bool { return slices.Contains(VariantValues(), v) }

// ParseVariant validates a variant name (regret.variant, --variant flags); the error lists the valid ones.
func ParseVariant(name string) (Variant, error) {
	return parse("reward variant", name, VariantValues())
}

// EndedBy is why an episode ended (episodes.ended_by).
type EndedBy string

// The ways an episode ends.
const (
	// EndedDone: the env returned done (its verdict is in success and return).
	EndedDone EndedBy = "done"
	// EndedMaxTurns: rollout.max_turns (or the context budget) ran out first.
	EndedMaxTurns EndedBy = "max_turns"
	// EndedEnvError: the env program raised, or returned something that breaks the contract.
	EndedEnvError EndedBy = "env_error"
	// EndedTimeout: the env program overran its sandbox deadline.
	EndedTimeout EndedBy = "timeout"
	// EndedAgentError: the Agent's model call failed.
	EndedAgentError EndedBy = "agent_error"
	// EndedTruncated: the Agent's answer reached its max_tokens without ending (finish_reason length, no
	// end-of-turn token); the cut-off answer is not played and the play ends there.
	EndedTruncated EndedBy = "truncated"
	// EndedEnvTruncated: the env truncated the episode (Gymnasium's truncated without terminated: its own
	// time limit ran out); the episode did not succeed, and its terminal return is 0 (the authors'
	// episode_reward counts only a terminated episode).
	EndedEnvTruncated EndedBy = "env_truncated"
)

// EndedByValues lists every way an episode ends.
func EndedByValues() []EndedBy {
	return []EndedBy{EndedDone, EndedEnvTruncated, EndedMaxTurns, EndedTruncated, EndedEnvError, EndedTimeout, EndedAgentError}
}

// EnvContract is the shape of an env program's step (envs.contract).
type EnvContract string

// The env program contracts.
const (
	// ContractGymnasium: step returns Gymnasium's (observation, reward, terminated, truncated, info), the
	// authors' contract.
	ContractGymnasium EnvContract = "gymnasium"
	// ContractLegacy: step returns the old Gym API's (observation, reward, done, info).
	ContractLegacy EnvContract = "legacy"
)

// EnvContractValues lists the env program contracts.
func EnvContractValues() []EnvContract { return []EnvContract{ContractGymnasium, ContractLegacy} }

// Valid reports whether e is a known ended_by value.
func (e EndedBy) Valid() bool { return slices.Contains(EndedByValues(), e) }

// ParseEndedBy validates an ended_by value; the error lists the valid ones.
func ParseEndedBy(name string) (EndedBy, error) {
	return parse("ended_by value", name, EndedByValues())
}

// JoinValues returns the values of an enum joined by sep ("games|tools", "games, tools").
func JoinValues[T ~string](values []T, sep string) string {
	names := make([]string, len(values))
	for i, v := range values {
		names[i] = string(v)
	}
	return strings.Join(names, sep)
}

func parse[T ~string](what, name string, values []T) (T, error) {
	if slices.Contains(values, T(name)) {
		return T(name), nil
	}
	return "", fmt.Errorf("unknown %s %q (one of %s)", what, name, JoinValues(values, ", "))
}
