package config

import "github.com/spadekit/spade/schemas"

// Generate configures the Designer's calls (stages/generate) and the writer of the privileged hint.
type Generate struct {
	// HintMode is who writes the privileged hint: separate or inline. separate asks the same model in an
	// untrained call after the gate accepts the env, reading the accepted program (the paper and the
	// authors' --spade-hint-mode self); inline takes it from the Designer's own trained answer.
	HintMode HintMode `json:"hint_mode"`
	// HintTemperature is the sampling temperature of the separate hint call (the authors'
	// --spade-hint-temperature, 0.3).
	HintTemperature float64 `json:"hint_temperature" range:">=0"`
	// HintMaxTokens caps the completion tokens of the separate hint call (the authors'
	// --spade-hint-max-tokens: 4096 in games, 2048 in tools).
	HintMaxTokens int `json:"hint_max_tokens" range:">=1"`
	// HintTopP is the nucleus sampling mass of the separate hint call; 0 takes llm.designer.top_p (the
	// hint writer is the Designer's model). The authors' hint call sends no top-p of its own, so their
	// model adapter's default of 0.9 applies; runs recorded before the key existed sampled the hint with
	// the Designer's top-p and replay with 0.
	HintTopP float64 `json:"hint_top_p" range:"[0,1]"`
	// HintThinking is whether the separate hint call asks a hybrid template to think: default, on or off.
	// default follows llm.designer.thinking (the hint writer is the Designer's model). The authors write
	// hints with thinking off at 8B.
	HintThinking Thinking `json:"hint_thinking"`
	// HintAttempts is how many times the separate hint call is made for one env when it fails or answers
	// nothing (the authors retry their hint writer 3 times); the env keeps an empty hint when every
	// attempt did.
	HintAttempts int `json:"hint_attempts" range:">=1"`
	// HintPromptFile names a template file to use instead of the embedded hint prompt; empty uses it.
	HintPromptFile string `json:"hint_prompt_file"`
	// Regen is how a slot whose candidate failed the gate is asked again: resample or repair. resample
	// draws a fresh sample of the original prompt with a fresh corpus document, no error feedback (the
	// authors' scripts, whose env_repair_turns is 0); repair shows the failed program and the gate's error.
	Regen Regen `json:"regen"`
	// Contract is the env program contract the Designer is asked for and the gate holds programs to:
	// gymnasium or legacy. gymnasium is the authors' (Gymnasium's API: a class named ...Env made as
	// Cls(max_turns=N), reset(seed=None) giving (observation, info), step giving (observation, reward,
	// terminated, truncated, info), solution() and close()), with the authors' validation in the official
	// gate; legacy is the old Gym API spade asked for before (reset(seed) giving the observation, step
	// giving (observation, reward, done, info)) with the gate checks of that time, which runs recorded
	// before the change set so that they replay. The sandbox plays programs of either shape under both.
	Contract schemas.EnvContract `json:"contract"`
	// ToolsContract is the tools program contract the Designer is asked for under generate.hint_mode
	// separate: authors or spade. authors asks for a subclass of the ToolUseBaseEnv the sandbox binds
	// (the authors' tools contract: reset() sets self._tools, self._state, the instructions and their
	// criteria; one tool_<name> method per tool; solution(); the base class reads the Agent's turns),
	// which rollout.tool_calls authors plays; spade asks for spade's own contract (tools() giving OpenAI
	// function schemas, step() receiving each call as JSON, success_conditions()), which
	// rollout.tool_calls spade plays. Read in the tools setting.
	ToolsContract ToolsContract `json:"tools_contract"`
}

// ToolsContract is generate.tools_contract: the tools program contract the Designer is asked for.
type ToolsContract string

// The tools contracts.
const (
	// ToolsContractAuthors asks for a ToolUseBaseEnv subclass.
	ToolsContractAuthors ToolsContract = "authors"
	// ToolsContractSpade asks for tools(), a JSON-call step and success_conditions().
	ToolsContractSpade ToolsContract = "spade"
)

// ToolsContractValues lists every tools contract.
func ToolsContractValues() []ToolsContract {
	return []ToolsContract{ToolsContractAuthors, ToolsContractSpade}
}

func init() {
	registerEnum(ToolsContractValues())
	registerEnum(schemas.EnvContractValues())
	registerEnum(HintModeValues())
	registerEnum(RegenValues())
}

// HintMode is generate.hint_mode: who writes the privileged hint.
type HintMode string

// The hint modes.
const (
	// HintSeparate asks the same model in a separate, untrained call after the gate accepts the env;
	// the call reads the accepted program (the paper and the authors' code).
	HintSeparate HintMode = "separate"
	// HintInline takes the hint from the Designer's own (trained) answer.
	HintInline HintMode = "inline"
)

// HintModeValues lists every hint mode.
func HintModeValues() []HintMode { return []HintMode{HintSeparate, HintInline} }

// Regen is generate.regen: how a slot whose candidate failed the gate is asked again.
type Regen string

// The regeneration modes.
const (
	// RegenResample draws a fresh sample of the original prompt (with a fresh corpus document), no error
	// feedback (the authors' scripts).
	RegenResample Regen = "resample"
	// RegenRepair shows the Designer its failed program and the gate's error.
	RegenRepair Regen = "repair"
)

// RegenValues lists every regeneration mode.
func RegenValues() []Regen { return []Regen{RegenResample, RegenRepair} }

// validate has no rule beyond the declared ranges.
func (Generate) validate(*Config) error { return nil }

// presetGenerate is the authors' hint writer and regeneration: a separate hint call at temperature 0.3
// and top-p 0.9 with 4,096 tokens (2,048 in tools), failed slots resampled, and their env contract
// (Gymnasium's).
func presetGenerate(p presetSpec) Generate {
	g := Generate{HintMode: HintSeparate, HintTemperature: 0.3, HintTopP: 0.9, HintMaxTokens: 4096, Regen: RegenResample, HintThinking: ThinkingDefault, HintAttempts: 3,
		Contract: schemas.ContractGymnasium, ToolsContract: ToolsContractSpade}
	if p.setting == schemas.SettingTools {
		g.ToolsContract = ToolsContractAuthors
	}
	if p.size == "qwen3-8b" {
		g.HintThinking = ThinkingOff
	}
	if p.setting == schemas.SettingTools {
		g.HintMaxTokens = 2048
	}
	if p.ownToolsScript() {
		g.HintMaxTokens = 512
	}
	return g
}
