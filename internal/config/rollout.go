package config

import (
	"strings"

	"github.com/spadekit/spade/schemas"
)

// Rollout configures the Agent's episodes (stages/rollout, played by internal/play): how many plays each
// env gets with and without the hint, how an episode runs and ends, and how its turns reach the server.
type Rollout struct {
	// GroupSize is the number of plays without the hint per env and step. They are the Agent's GRPO
	// group (the authors' global batch 192 / 24 envs = 8).
	GroupSize int `json:"group_size" range:">=1"`
	// PlaysPerEnv is how many unhinted plays each env gets per step: fill_batch or group_size. fill_batch
	// plays ceil(grpo.global_batch / n) with n the pool's accepted envs not dropped for a timed-out step,
	// so a pool the gate left short still fills the batch (the authors': 8 when 24 of 24 are accepted, 10
	// for 20, 15 for 13); group_size plays rollout.group_size whatever the pool's size.
	PlaysPerEnv PlaysPerEnv `json:"plays_per_env"`
	// HintedGroupSize is the number of plays with the hint per env; 0 plays none. rollout.hinted_at
	// pool_start plays them all at the pool's first step; every_step plays at most rollout.group_size of
	// them at every step, each with an unhinted twin of the same index (the authors'
	// --spade-hint-plays-per-game 16).
	HintedGroupSize int `json:"hinted_group_size" range:">=0"`
	// HintedAt is when the hinted plays run: pool_start or every_step. pool_start plays them at the
	// pool's first step only (the authors' schedule); every_step at every step, beside the unhinted plays.
	HintedAt HintedAt `json:"hinted_at"`
	// HintedThinking is whether the hinted plays' calls ask a hybrid template to think: default, on or off.
	// default follows llm.agent.thinking, as the unhinted plays always do. The authors play the hinted
	// group with thinking off at 8B.
	HintedThinking Thinking `json:"hinted_thinking"`
	// MaxTurns is the most actions an episode takes. An episode still running then ends with ended_by
	// max_turns (the authors' --spade-max-turns, 25).
	MaxTurns int `json:"max_turns" range:">=1"`
	// TurnBudget is how an env instance learns its turn budget: own or fixed. own makes the instance
	// as Cls() (Cls(max_turns=rollout.max_turns) when Cls() raises TypeError), then sets its max_turns
	// attribute to min(its own value, rollout.max_turns) when that is a positive int, or to
	// rollout.max_turns when the attribute exists otherwise: a program that ends its episodes at its own
	// max_turns keeps its pace, capped (the authors' loader). fixed makes it as
	// Cls(max_turns=rollout.max_turns), every env paced at rollout.max_turns (the paper's text).
	TurnBudget TurnBudget `json:"turn_budget"`
	// ActionPassing is what a games env's step receives from an answer: boxed or content. boxed passes
	// "\boxed{CONTENT}" for the answer's first plain \boxed{…} (else its last complete one, nested
	// braces kept) and the stripped answer itself when it has no box, so the env always steps and
	// reads the command itself (the authors' wrapper and their Designer's contract); content passes the
	// bare content of the last \boxed{…} and, without one, steps nothing and answers with format
	// feedback. Read under rollout.action_format boxed only.
	ActionPassing ActionPassing `json:"action_passing"`
	// InstanceWarmup is what an env instance has played before a play's own reset: validation or none.
	// validation runs the authors' load-time validation on it first (reset(seed=42), the steps
	// "\boxed{1}", "\boxed{test}" and "\boxed{42}" until one ends the episode, reset(seed=123)), as
	// their loader validates the very instance a play then resets, so a program that keeps state across
	// resets starts the play where the validation left it; a failure there ends the play with ended_by
	// env_error. none starts the play on a fresh instance. Read in the games setting, and in tools under
	// rollout.tool_calls authors (their tool-use actor loads and validates the instance it plays the same
	// way; under spade a tools env's actions are JSON calls).
	InstanceWarmup InstanceWarmup `json:"instance_warmup"`
	// PlayRetry is which failed plays are played once more: failed or worker_death. failed replays, once,
	// every play that ended in env_error or agent_error (the program could not start or reset an
	// instance, the sandbox failed under it, a model call failed after its retries), from a fresh instance
	// with the same seed, the first attempt's turns and calls left out; a play that timed out is not
	// replayed (its env is hung and dropped for the pool). worker_death replays only a play whose sandbox
	// worker died under it. Either way a program that does not load is not replayed.
	PlayRetry PlayRetry `json:"play_retry"`
	// EmptyHint is what an env whose hint is empty (every hint call failed or answered nothing) gets
	// instead of its hinted plays: skip or play. skip plays none for it, so its regret is 0 (the authors');
	// play plays them with the empty hint.
	EmptyHint EmptyHint `json:"empty_hint"`
	// EnvError is what an exception in an env's step (or a step return of the wrong shape or types)
	// does to the play: score or drop. score ends the play at that turn with the observation
	// "Error: MESSAGE", reward −1 and terminated, so the play counts with outcome −1 in its Agent group
	// and the Designer's win rate (the authors' wrapper); drop ends it with ended_by env_error, left
	// out of training as grpo.failed_play says.
	EnvError EnvErrorPolicy `json:"env_error"`
	// ToolCalls is how a tools answer reaches the env: authors or spade. authors reads the answer as the
	// authors' tool-use actor does, on the text as sampled: an <answer>…</answer> anywhere steps the env
	// with the whole text; else every <tool_call> block that parses (the XML function form first, then
	// the JSON form) runs in order through the program's execute_tool(name, arguments), each output a
	// tool message, the turn's reward 0; an answer with neither steps the env with the whole text (the
	// base class's format error, −0.1). The tools come from the program's get_tools() (none when it has
	// none, and then no call parses). spade reads the last <answer> or the calls outside <think>, checks
	// each against tools() and steps the env with the call as JSON, answering an unreadable turn with
	// format feedback and no step (spade's own tools contract).
	ToolCalls ToolCalls `json:"tool_calls"`
	// MalformedToolCall is what happens to a turn under rollout.tool_calls authors that writes
	// <tool_call> but has no call that parses: mask or train. mask gives its tokens loss mask 0 and
	// adds a note after the env's reply that shows the call's expected form (the authors' tools scripts
	// set SPADE_MASK_MALFORMED_TOOLCALL=1); train keeps the turn in the loss and the reply as the env
	// gave it.
	MalformedToolCall MalformedToolCall `json:"malformed_tool_call"`
	// ContextTokens is the Agent's context budget in tokens, prompt and answer together. Under
	// rollout.context truncate the prompt is counted in real tokens (the exact sequence under token_io
	// tokens, else the server's usage plus an estimate of the newest observation), each answer's
	// max_tokens is lowered to what is left less 64, and the play ends once no more than 64 are left;
	// drop_oldest keeps each prompt under context_tokens − llm.agent.max_tokens by estimate (the
	// authors' --spade-max-context-length, 32768).
	ContextTokens int `json:"context_tokens" range:">=1"`
	// Context is what happens when the history outgrows rollout.context_tokens: truncate or drop_oldest.
	// truncate ends the episode with ended_by max_turns when fewer than 65 tokens are left for an
	// answer (the authors keep the whole history and stop);
	// drop_oldest drops the oldest turns from the prompt and goes on.
	Context ContextPolicy `json:"context"`
	// PairedSeeds gives the i-th hinted and unhinted plays of an env the same reset seed. The hint regret
	// then compares like with like (not in the authors' code; off in the presets).
	PairedSeeds bool `json:"paired_seeds"`
	// Return is what an episode's return (episodes.return) is: terminal or sum. terminal is the last
	// step's reward clipped to [−1, 1] when the episode terminated, else 0 (the authors' episode_reward);
	// sum is the sum of the env's rewards.
	Return ReturnKind `json:"return"`
	// HintPlacement is where a hinted play shows the hint: observation or system. observation appends a
	// blank line and "HINT: ..." to the first observation (the paper and the authors' code); system puts
	// it in the Agent's system prompt.
	HintPlacement HintPlacement `json:"hint_placement"`
	// ActionFormat is how a games answer marks its move: boxed or tag. boxed reads the last \boxed{...}
	// (the authors' games template), tag <action>...</action>; tools answers are tool calls either way.
	ActionFormat ActionFormat `json:"action_format"`
	// PromptFile names a template file to use instead of the embedded Agent prompt; empty uses it. Its
	// body is the system prompt (none when empty), an optional {{define "first_user"}} the first user
	// message; both get stages/rollout.PromptData (MaxTurns, Hint, Observation, ActionFormat).
	PromptFile string `json:"prompt_file"`
	// AgentPrompt is which embedded Agent prompt frames an episode: setting, problem or observation.
	// setting is the setting's own (games: a language game with boxed moves; tools: the tools prompts);
	// problem shows the first observation as a problem to reason through, the final answer boxed (the
	// authors' fixed-environment prompt for RLVE's single-turn problems; games with boxed answers only);
	// observation sends the first observation (with the hint when the play is hinted) as the only user
	// message, as it is, with no system prompt (the authors' tool-use actor: the env's instruction is the
	// message and the tools reach the model through the chat template). rollout.prompt_file, when set,
	// is used instead of any of them.
	AgentPrompt AgentPrompt `json:"agent_prompt"`
	// TokenIO is how the Agent's turns reach the server: chat or tokens. chat makes every turn a Chat
	// Completions call with the message history, which the server's chat template renders. tokens (the
	// authors' actor, the non-thinking games presets) makes turn 0 a chat call and every later turn a
	// token-id call (vLLM's /v1/completions, SGLang's /generate) whose prompt is the running token
	// sequence: the previous turn's prompt ids and completion ids as the server returned them, then the
	// tokens the chat template adds for the next observation (rollout.token_io_delta). Under tokens a play
	// is one token sequence by construction (no chat template re-renders the history, no completion is
	// re-tokenized), so the Agent's GRPO samples hold exactly what was sampled and the context check counts
	// the real prompt length. tokens needs a server that returns token ids and rollout.context truncate;
	// in the tools setting the delta of a turn's tool results is what the template renders for them
	// (Qwen3: one user turn of <tool_response> blocks), so rollout.token_io_delta must not be text. The
	// tokenize calls are recorded in llm_calls beside the turns' calls, so a replayed run answers them
	// too.
	TokenIO TokenIO `json:"token_io"`
	// TokenIOTemplate is the text between a completion and the next one under rollout.token_io tokens.
	// {observation} in it stands for the next observation (or the parse feedback); the text holds the
	// chat template's end of the assistant turn that the completion did not already sample, the user
	// header, the observation, the end of the user turn and the generation prompt. It is tokenized by the
	// server's /tokenize without special tokens added, and must hold {observation} under tokens. For a
	// ChatML template (Qwen3), whose completions end with the sampled <|im_end|>:
	// "<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n" (the presets' value). Read
	// under rollout.token_io_delta text, and auto when it falls back to text.
	TokenIOTemplate string `json:"token_io_template"`
	// TokenIOToolResult is what one tool result becomes in the text delta of a tools turn under
	// rollout.token_io tokens: {result} stands for the result, the turn's results are joined by a newline
	// and the whole stands for {observation} in rollout.token_io_template. For Qwen3 (the presets), whose
	// template groups a turn's results in one user turn: "<tool_response>\n{result}\n</tool_response>".
	// Read when the delta is text (rollout.token_io_delta text, or auto falling back to it) in tools.
	TokenIOToolResult string `json:"token_io_tool_result"`
	// TokenIODelta is where the tokens after each completion come from under rollout.token_io tokens:
	// auto, server, template or text. Each is the authors' get_token_delta: the chat template rendered with
	// the new message and without it, the difference tokenized. server has the server render and tokenize
	// both (vLLM's /tokenize with messages: the served model's own template, no files needed); template
	// renders the model's own chat template here (rollout.chat_template_dir, Jinja2 through the Python
	// interpreter of sandbox.python) and has the server tokenize the difference (vLLM and SGLang); text
	// tokenizes rollout.token_io_template around the observation, a hand-written string. auto (the
	// presets) is template when rollout.chat_template_dir or grpo.model_path is set, else server against
	// vLLM, else text (the presets' rollout.token_io_template is Qwen3's delta).
	TokenIODelta TokenIODelta `json:"token_io_delta"`
	// ChatTemplateDir is the Agent model's Hugging Face directory, whose tokenizer_config.json holds its
	// chat template, for rollout.token_io_delta template; empty means grpo.model_path.
	ChatTemplateDir string `json:"chat_template_dir"`
}

// TokenIODelta is rollout.token_io_delta: where the tokens between two completions come from.
type TokenIODelta string

// The delta sources.
const (
	// DeltaAuto picks template, server or text (see Rollout.TokenIODelta).
	DeltaAuto TokenIODelta = "auto"
	// DeltaServer has the server render the chat template with and without the new message and tokenize
	// both (vLLM's /tokenize with messages); the delta is the second's ids past the first's.
	DeltaServer TokenIODelta = "server"
	// DeltaTemplate renders the model's chat template (rollout.chat_template_dir) here and has the server
	// tokenize the text the new message adds.
	DeltaTemplate TokenIODelta = "template"
	// DeltaText has the server tokenize rollout.token_io_template around the observation.
	DeltaText TokenIODelta = "text"
)

// TokenIODeltaValues lists every delta source.
func TokenIODeltaValues() []TokenIODelta {
	return []TokenIODelta{DeltaAuto, DeltaServer, DeltaTemplate, DeltaText}
}

// ChatTemplatePath is the directory of the Agent model's chat template: rollout.chat_template_dir, else
// grpo.model_path; empty when neither is set.
func (c *Config) ChatTemplatePath() string {
	if c.Rollout.ChatTemplateDir != "" {
		return c.Rollout.ChatTemplateDir
	}
	return c.GRPO.ModelPath
}

func init() {
	registerEnum(TokenIODeltaValues())
	registerEnum(TurnBudgetValues())
	registerEnum(ActionPassingValues())
	registerEnum(EnvErrorPolicyValues())
	registerEnum(InstanceWarmupValues())
	registerEnum(PlayRetryValues())
	registerEnum(EmptyHintValues())
	registerEnum(HintedAtValues())
	registerEnum(PlaysPerEnvValues())
	registerEnum(ContextPolicyValues())
	registerEnum(ReturnKindValues())
	registerEnum(HintPlacementValues())
	registerEnum(ActionFormatValues())
	registerEnum(TokenIOValues())
	registerEnum(AgentPromptValues())
	registerEnum(ToolCallsValues())
	registerEnum(MalformedToolCallValues())
}

// ToolCalls is rollout.tool_calls: how a tools answer reaches the env.
type ToolCalls string

// The tool-call readings.
const (
	// ToolCallsAuthors runs the calls through execute_tool and steps the env with the text otherwise.
	ToolCallsAuthors ToolCalls = "authors"
	// ToolCallsSpade steps the env with each call as JSON.
	ToolCallsSpade ToolCalls = "spade"
)

// ToolCallsValues lists every tool-call reading.
func ToolCallsValues() []ToolCalls { return []ToolCalls{ToolCallsAuthors, ToolCallsSpade} }

// MalformedToolCall is rollout.malformed_tool_call: what a turn whose <tool_call> does not parse does to
// the loss.
type MalformedToolCall string

// The malformed-call treatments.
const (
	// MalformedMask masks the turn out of the loss and adds the format note to the env's reply.
	MalformedMask MalformedToolCall = "mask"
	// MalformedTrain trains the turn like any other.
	MalformedTrain MalformedToolCall = "train"
)

// MalformedToolCallValues lists every malformed-call treatment.
func MalformedToolCallValues() []MalformedToolCall {
	return []MalformedToolCall{MalformedMask, MalformedTrain}
}

// AgentPrompt is rollout.agent_prompt: which embedded Agent prompt frames an episode.
type AgentPrompt string

// The Agent prompts.
const (
	// AgentPromptSetting is the setting's own prompt.
	AgentPromptSetting AgentPrompt = "setting"
	// AgentPromptProblem frames the first observation as a problem whose final answer is boxed.
	AgentPromptProblem AgentPrompt = "problem"
	// AgentPromptObservation sends the first observation as the only user message, with no system
	// prompt and nothing around it.
	AgentPromptObservation AgentPrompt = "observation"
)

// AgentPromptValues lists every Agent prompt.
func AgentPromptValues() []AgentPrompt {
	return []AgentPrompt{AgentPromptSetting, AgentPromptProblem, AgentPromptObservation}
}

// TurnBudget is rollout.turn_budget: whose max_turns paces an env instance.
type TurnBudget string

// The turn budgets.
const (
	// TurnBudgetOwn keeps the class's own max_turns, capped at rollout.max_turns.
	TurnBudgetOwn TurnBudget = "own"
	// TurnBudgetFixed gives every instance max_turns = rollout.max_turns.
	TurnBudgetFixed TurnBudget = "fixed"
)

// TurnBudgetValues lists every turn budget.
func TurnBudgetValues() []TurnBudget { return []TurnBudget{TurnBudgetOwn, TurnBudgetFixed} }

// ActionPassing is rollout.action_passing: what a games env's step receives.
type ActionPassing string

// The action passings.
const (
	// ActionPassBoxed passes "\boxed{CONTENT}", or the stripped answer when it has no box.
	ActionPassBoxed ActionPassing = "boxed"
	// ActionPassContent passes the last box's bare content; an answer without one steps nothing.
	ActionPassContent ActionPassing = "content"
)

// ActionPassingValues lists every action passing.
func ActionPassingValues() []ActionPassing {
	return []ActionPassing{ActionPassBoxed, ActionPassContent}
}

// InstanceWarmup is rollout.instance_warmup: what an env instance plays before a play's reset.
type InstanceWarmup string

// The instance warm-ups.
const (
	// WarmupValidation runs the authors' load-time validation on the instance first.
	WarmupValidation InstanceWarmup = "validation"
	// WarmupNone plays on a fresh instance.
	WarmupNone InstanceWarmup = "none"
)

// InstanceWarmupValues lists every instance warm-up.
func InstanceWarmupValues() []InstanceWarmup { return []InstanceWarmup{WarmupValidation, WarmupNone} }

// PlayRetry is rollout.play_retry: which failed plays are played once more.
type PlayRetry string

// The play retries.
const (
	// RetryFailed replays once every play that ended in env_error or agent_error (the authors').
	RetryFailed PlayRetry = "failed"
	// RetryWorkerDeath replays only a play whose sandbox worker died.
	RetryWorkerDeath PlayRetry = "worker_death"
)

// PlayRetryValues lists every play retry.
func PlayRetryValues() []PlayRetry { return []PlayRetry{RetryFailed, RetryWorkerDeath} }

// EmptyHint is rollout.empty_hint: the hinted plays of an env without a hint.
type EmptyHint string

// The ways to treat an env without a hint.
const (
	// EmptyHintSkip plays no hinted play for it (the authors').
	EmptyHintSkip EmptyHint = "skip"
	// EmptyHintPlay plays its hinted plays with the empty hint.
	EmptyHintPlay EmptyHint = "play"
)

// EmptyHintValues lists every rollout.empty_hint.
func EmptyHintValues() []EmptyHint { return []EmptyHint{EmptyHintSkip, EmptyHintPlay} }

// EnvErrorPolicy is rollout.env_error: what a step that raised does to its play.
type EnvErrorPolicy string

// The env error policies.
const (
	// EnvErrorScore ends the play with reward −1, terminated; the play counts.
	EnvErrorScore EnvErrorPolicy = "score"
	// EnvErrorDrop ends the play with ended_by env_error.
	EnvErrorDrop EnvErrorPolicy = "drop"
)

// EnvErrorPolicyValues lists every env error policy.
func EnvErrorPolicyValues() []EnvErrorPolicy { return []EnvErrorPolicy{EnvErrorScore, EnvErrorDrop} }

// PlaysPerEnv is rollout.plays_per_env: how the number of unhinted plays per env and step is chosen.
type PlaysPerEnv string

// The ways to choose the unhinted plays per env.
const (
	// PlaysFillBatch plays ceil(grpo.global_batch / playable envs) per env (the authors').
	PlaysFillBatch PlaysPerEnv = "fill_batch"
	// PlaysGroupSize plays rollout.group_size per env, however many envs the pool has.
	PlaysGroupSize PlaysPerEnv = "group_size"
)

// PlaysPerEnvValues lists every choice.
func PlaysPerEnvValues() []PlaysPerEnv { return []PlaysPerEnv{PlaysFillBatch, PlaysGroupSize} }

// HintedAt is rollout.hinted_at: at which steps of a pool the hinted plays run.
type HintedAt string

// The hinted-play schedules.
const (
	// HintedAtPoolStart plays rollout.hinted_group_size hinted episodes per env at the pool's first
	// step only (the authors' scripts).
	HintedAtPoolStart HintedAt = "pool_start"
	// HintedAtEveryStep plays them at every step of the pool, at most rollout.group_size of them.
	HintedAtEveryStep HintedAt = "every_step"
)

// HintedAtValues lists every schedule.
func HintedAtValues() []HintedAt { return []HintedAt{HintedAtPoolStart, HintedAtEveryStep} }

// ContextPolicy is rollout.context: what happens when an episode's history no longer fits
// rollout.context_tokens.
type ContextPolicy string

// The context policies.
const (
	// ContextTruncate ends the episode (the authors keep the whole history and stop there).
	ContextTruncate ContextPolicy = "truncate"
	// ContextDropOldest drops the oldest turns from the prompt and goes on.
	ContextDropOldest ContextPolicy = "drop_oldest"
)

// ContextPolicyValues lists every context policy.
func ContextPolicyValues() []ContextPolicy {
	return []ContextPolicy{ContextTruncate, ContextDropOldest}
}

// ReturnKind is rollout.return: what an episode's return (episodes.return) is.
type ReturnKind string

// The returns.
const (
	// ReturnTerminal is the last step's reward clipped to [−1, 1] when the episode terminated, else 0
	// (the authors' episode_reward).
	ReturnTerminal ReturnKind = "terminal"
	// ReturnSum is the sum of the env's rewards over the episode.
	ReturnSum ReturnKind = "sum"
)

// ReturnKindValues lists every return.
func ReturnKindValues() []ReturnKind { return []ReturnKind{ReturnTerminal, ReturnSum} }

// HintPlacement is rollout.hint_placement: where a hinted play's Agent reads the hint.
type HintPlacement string

// The hint placements.
const (
	// HintInObservation appends a blank line and "HINT: ..." to the first observation (the paper and
	// the authors' code).
	HintInObservation HintPlacement = "observation"
	// HintInSystem puts the hint in the Agent's system prompt.
	HintInSystem HintPlacement = "system"
)

// HintPlacementValues lists every placement.
func HintPlacementValues() []HintPlacement { return []HintPlacement{HintInObservation, HintInSystem} }

// ActionFormat is rollout.action_format: how the Agent marks its move in a games answer.
type ActionFormat string

// The action formats.
const (
	// ActionBoxed reads the last \boxed{...} of the answer (the authors' games template).
	ActionBoxed ActionFormat = "boxed"
	// ActionTag reads <action>...</action>.
	ActionTag ActionFormat = "tag"
)

// ActionFormatValues lists every action format.
func ActionFormatValues() []ActionFormat { return []ActionFormat{ActionBoxed, ActionTag} }

// TokenIO is rollout.token_io: how the Agent's turns are sent to the server (see Rollout.TokenIO).
type TokenIO string

// The token I/O modes.
const (
	// TokenIOChat sends every turn to Chat Completions with the message history (the server's chat
	// template renders it).
	TokenIOChat TokenIO = "chat"
	// TokenIOTokens sends turn 0 to Chat Completions and every later turn to /completions with the
	// running token sequence as the prompt (rollout.token_io_template).
	TokenIOTokens TokenIO = "tokens"
)

// TokenIOValues lists every token I/O mode.
func TokenIOValues() []TokenIO { return []TokenIO{TokenIOChat, TokenIOTokens} }

// TokenIOObservation is the placeholder of rollout.token_io_template that the observation replaces.
const TokenIOObservation = "{observation}"

// TokenIOResult is the placeholder of rollout.token_io_tool_result that a tool result replaces.
const TokenIOResult = "{result}"

// qwen3ToolResult is rollout.token_io_tool_result for Qwen3, whose template renders a turn's tool
// results as <tool_response> blocks of one user turn.
const qwen3ToolResult = "<tool_response>\n{result}\n</tool_response>"

// qwen3TokenIOTemplate is rollout.token_io_template for Qwen3's ChatML: what its template adds after a
// completion (which ends with the sampled <|im_end|>) for a user message, as get_token_delta finds it
// (the newline after <|im_end|> belongs to the rendering without the message). The presets' value, and
// the example errors give.
const qwen3TokenIOTemplate = "<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n"

// mayUseText reports whether the token-mode delta may be the hand-written text: text itself, or auto
// without the model's template directory (when the server is not vLLM).
func (r Rollout) mayUseText(c *Config) bool {
	return r.TokenIODelta == DeltaText || r.TokenIODelta == DeltaAuto && c.ChatTemplatePath() == ""
}

// validate checks what rollout.token_io tokens needs: a template that holds the observation where the
// delta may be text, the context policy that keeps the token sequence whole, and a delta that renders
// tool results in the tools setting.
func (r Rollout) validate(c *Config) error {
	if r.AgentPrompt == AgentPromptProblem && (c.Setting != schemas.SettingGames || r.ActionFormat != ActionBoxed) {
		return invalidf("config: key \"rollout.agent_prompt\" problem asks for a boxed answer: it needs setting games and rollout.action_format boxed")
	}
	if r.TokenIO != TokenIOTokens {
		return nil
	}
	switch {
	case r.mayUseText(c) && !strings.Contains(r.TokenIOTemplate, TokenIOObservation):
		return invalidf("config: key \"rollout.token_io_template\" must contain %s when rollout.token_io is tokens and rollout.token_io_delta text (for Qwen3's ChatML: %q)",
			TokenIOObservation, qwen3TokenIOTemplate)
	case r.TokenIODelta == DeltaTemplate && r.ChatTemplateDir == "" && c.GRPO.ModelPath == "":
		return invalidf("config: rollout.token_io_delta template needs the Agent model's chat template: set rollout.chat_template_dir (or grpo.model_path) to its Hugging Face directory, or use rollout.token_io_delta server with vLLM")
	case r.Context != ContextTruncate:
		return invalidf("config: key \"rollout.context\" must be truncate when rollout.token_io is tokens (dropping old turns would break the token sequence)")
	case c.Setting == schemas.SettingTools && r.mayUseText(c) && !strings.Contains(r.TokenIOToolResult, TokenIOResult):
		return invalidf("config: key \"rollout.token_io_tool_result\" must contain %s when tools play in token mode from a text delta (for Qwen3: %q)",
			TokenIOResult, qwen3ToolResult)
	}
	return nil
}

// presetRollout is the authors' episodes: 8 unhinted plays per env and step, 16 hinted ones at the pool's
// first step, 25 turns in a 32,768-token context that ends the episode when spent, the terminal return,
// the hint in the first observation, \boxed{} moves, unpaired seeds, token-in-token-out plays for the
// non-thinking games presets. The 4B tools script plays
// 16 unhinted (global batch 256 over 16 envs) and 4 hinted plays per env.
func presetRollout(p presetSpec) Rollout {
	r := Rollout{GroupSize: 8, PlaysPerEnv: PlaysFillBatch, HintedGroupSize: 16, HintedAt: HintedAtPoolStart, MaxTurns: 25, ContextTokens: 32768,
		Context: ContextTruncate, PairedSeeds: false, Return: ReturnTerminal, HintPlacement: HintInObservation,
		ActionFormat: ActionBoxed, TurnBudget: TurnBudgetOwn, ActionPassing: ActionPassBoxed, EnvError: EnvErrorScore,
		InstanceWarmup: WarmupValidation, PlayRetry: RetryFailed, EmptyHint: EmptyHintSkip,
		TokenIO: TokenIOChat, TokenIODelta: DeltaAuto, TokenIOTemplate: qwen3TokenIOTemplate,
		TokenIOToolResult: qwen3ToolResult, AgentPrompt: AgentPromptSetting, ToolCalls: ToolCallsSpade, MalformedToolCall: MalformedTrain}
	if p.setting == schemas.SettingTools {
		r.ToolCalls, r.MalformedToolCall, r.AgentPrompt = ToolCallsAuthors, MalformedMask, AgentPromptObservation
	}
	if p.ownToolsScript() {
		r.GroupSize, r.HintedGroupSize = 16, 4
	}
	// A play is built token by token (token mode) for the models that do not think and for every tools
	// play, thinking or not. The 8B games Agent thinks: one sample per turn, in chat.
	if p.size != "qwen3-8b" || p.setting == schemas.SettingTools {
		r.TokenIO = TokenIOTokens
	}
	// At 8B the hinted games plays do not think; hinted tools plays take the Agent's settings, so think.
	r.HintedThinking = ThinkingDefault
	switch {
	case p.size == "qwen3-8b" && p.setting == schemas.SettingTools:
		r.HintedThinking = ThinkingOn
	case p.size == "qwen3-8b":
		r.HintedThinking = ThinkingOff
	}
	return r
}
