package config

import "github.com/spadekit/spade/schemas"

// LLM configures the generation backends (internal/llm): the model behind each role and the client that
// calls them. The Designer and the Agent share the trained weights θ; the hint writer is the Designer's
// model sampled with generate.hint_temperature and generate.hint_max_tokens.
type LLM struct {
	// Designer is the model that writes the environment programs (stages/generate).
	Designer Role `json:"designer"`
	// Agent is the model that plays the environments (stages/rollout) and is evaluated (stages/eval).
	Agent Role `json:"agent"`
	// Screen is the tools setting's screen model of the gate (the tools_screen check); an empty base URL
	// or model takes the Agent's. With neither, the check is skipped, but under gate.tools_checks authors
	// (the official tools checks), where the screen is the authors' LLM validator and is the Agent's model,
	// the training model, as theirs is.
	Screen Role `json:"screen"`
	// MaxInFlight bounds the model calls in flight at once, over every role; 0 bounds them only per
	// server (llm.server_max_in_flight), so the calls in flight follow the plays: a play has one call
	// at a time, and a pool's first step at the paper's shape has 576 plays. Every preset: 0.
	MaxInFlight int `json:"max_in_flight" range:">=0"`
	// ServerMaxInFlight bounds the calls in flight to each server of a role (each URL of its base_url).
	// Keep the server's --max-num-seqs (vLLM) or --max-running-requests (SGLang) about as large. Every
	// preset: 1024.
	ServerMaxInFlight int `json:"server_max_in_flight" range:">=1"`
	// TimeoutSeconds bounds one HTTP attempt of a call, in seconds. A slower attempt fails the call with a
	// timeout, which is not retried.
	TimeoutSeconds int `json:"timeout_seconds" range:">0"`
	// MaxRetries is how many times a failed call is retried; 0 does not retry. A 429, a 5xx and a
	// connection error are retried, with jittered exponential backoff.
	MaxRetries int `json:"max_retries" range:">=0"`
	// ToolChoice is the tool_choice a chat request with tools carries: none or omit. spade parses the
	// tool calls from the sampled text either way and sends the tools so that the server's chat template
	// renders them; neither value needs a server-side tool parser. none suits vLLM (which renders the
	// tools under none and takes an omitted tool_choice as auto, answered 400 without
	// --enable-auto-tool-choice); omit suits SGLang (which leaves the tools out of the template under
	// none, and without a --tool-call-parser returns the calls as text). The authors call SGLang's
	// /generate with token ids and no tool_choice. Every preset: none.
	ToolChoice ToolChoice `json:"tool_choice"`
	// Server is which inference server the roles talk to: auto, vllm or sglang. Their request extras and
	// response layouts differ (vLLM 0.10.2+: return_token_ids, the top-level prompt_token_ids,
	// /v1/completions with token ids; SGLang 0.5.13+: return_prompt_token_ids and return_meta_info, ids
	// per choice, /generate with input_ids). auto reads it from GET /v1/models (owned_by) when a stage
	// starts, and a replay from the recorded requests; a server that names neither gets vLLM's layout.
	Server LLMServer `json:"server"`
	// PromptFile names a template file to use instead of the embedded Designer prompt; empty uses it.
	// stages/generate.PromptData lists what the template gets.
	PromptFile string `json:"prompt_file"`
}

// Role configures the model behind one role (llm.designer, llm.agent or llm.screen).
type Role struct {
	// BaseURL is the role's OpenAI-compatible endpoint, such as http://host:8000/v1, or several
	// replicas of the same model separated by commas: every turn of a play then goes to one replica (its
	// prefix cache reused), a new play to the one with the fewest plays, and a replica that fails is left
	// out for 30 s while its plays go on elsewhere. One URL in front of a router (SGLang's, vLLM's
	// data-parallel server) works as one server. replay:RUN answers every call from the llm_calls a
	// recorded run holds; empty takes $OPENAI_BASE_URL when the client starts (the presets copy it at
	// spade init).
	BaseURL string `json:"base_url"`
	// Model is the served model name the role calls. Trained weights published as a LoRA adapter are
	// called by the adapter's name instead.
	Model string `json:"model"`
	// APIKeyEnv names the environment variable that holds the role's API key; empty sends none. The key
	// is sent as a bearer token.
	APIKeyEnv string `json:"api_key_env"`
	// MaxTokens caps the completion tokens of one call of the role. The authors' launch scripts give the
	// Designer 16384 (--spade-env-max-tokens; 20000 at 8B) and the Agent 8192 (--spade-actor-max-tokens);
	// the screen's 2048 in games is spade's (tools: the authors' validator's 16,384).
	MaxTokens int `json:"max_tokens" range:">=1"`
	// Temperature is the role's sampling temperature; 0 samples greedily. The authors' launch scripts
	// sample the Designer and the Agent at 0.6 (--spade-env-temperature, --spade-actor-temperature); the
	// screen is greedy in games (tools: the authors' validator's 0.3).
	Temperature float64 `json:"temperature" range:">=0"`
	// TopP is the role's nucleus sampling mass; 1 keeps every token. Each token is drawn from the smallest
	// set of likeliest tokens whose probabilities add up to it (the authors' 0.95 for the Designer and the
	// Agent).
	TopP float64 `json:"top_p" range:"(0,1]"`
	// TopK keeps the role's k most likely tokens at each sampling step; 0 leaves it to the server. The
	// authors sample the Designer and the Agent with 20.
	TopK int `json:"top_k" range:">=0"`
	// Thinking is whether the role's chat requests ask a hybrid thinking template to think: default, on or
	// off. on and off send chat_template_kwargs {"enable_thinking": true|false} (read by vLLM and SGLang
	// alike); default sends none, leaving the template's own default (Qwen3-8B thinks). In the 8B presets
	// the Agent thinks and the Designer does not; on for the Designer is the thinking Designer the 8B
	// scripts' flags suggest.
	Thinking Thinking `json:"thinking"`
}

// Thinking is llm.<role>.thinking, generate.hint_thinking and rollout.hinted_thinking: what a call asks
// of a hybrid thinking chat template.
type Thinking string

// The thinking values.
const (
	// ThinkingDefault sends no chat_template_kwargs.
	ThinkingDefault Thinking = "default"
	// ThinkingOn sends {"enable_thinking": true}.
	ThinkingOn Thinking = "on"
	// ThinkingOff sends {"enable_thinking": false}.
	ThinkingOff Thinking = "off"
)

// ThinkingValues lists every thinking value.
func ThinkingValues() []Thinking { return []Thinking{ThinkingDefault, ThinkingOn, ThinkingOff} }

// Kwargs is the chat_template_kwargs the value sends: nil for default (or empty, an old run's value).
func (t Thinking) Kwargs() map[string]any {
	switch t {
	case ThinkingOn:
		return map[string]any{"enable_thinking": true}
	case ThinkingOff:
		return map[string]any{"enable_thinking": false}
	}
	return nil
}

func init() {
	registerEnum(ThinkingValues())
	registerEnum(LLMServerValues())
}

// LLMServer is llm.server: which inference server the roles talk to.
type LLMServer string

// The llm.server values.
const (
	// ServerAuto detects the server from GET /v1/models.
	ServerAuto LLMServer = "auto"
	// ServerVLLM is vLLM's layout.
	ServerVLLM LLMServer = "vllm"
	// ServerSGLang is SGLang's layout.
	ServerSGLang LLMServer = "sglang"
)

// LLMServerValues lists every llm.server value.
func LLMServerValues() []LLMServer { return []LLMServer{ServerAuto, ServerVLLM, ServerSGLang} }

// validate has no rule beyond the declared ranges.
func (LLM) validate(*Config) error { return nil }

// presetLLM is the sampling of the authors' launch scripts for the Designer and the Agent (temperature
// 0.6, top-p 0.95, top-k 20; 16,384 Designer tokens, 20,000 at 8B; 8,192 Agent tokens; at 8B, the only
// hybrid model, the Agent thinks and the Designer does not), in tools the screen the authors' LLM
// validator (the training model at temperature 0.3, top-p 0.9, 16,384 tokens; games have none: a greedy
// screen without a model),
// and the client limits: calls in flight as the plays make them, up to 1024 per server, 10 minutes per
// attempt, 6 retries.
func presetLLM(p presetSpec) LLM {
	designerTokens, designerThinking, agentThinking := 16384, ThinkingDefault, ThinkingDefault
	if p.size == "qwen3-8b" {
		// The hybrid 8B model: the Agent thinks; the Designer's corpus-grounded call is rendered with the
		// run's template default, which the scripts set to no thinking.
		designerTokens, designerThinking, agentThinking = 20000, ThinkingOff, ThinkingOn
	}
	screen := Role{APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 2048, Temperature: 0, TopP: 1.0, Thinking: ThinkingDefault}
	if p.setting == schemas.SettingTools {
		// The tools scripts' LLM validator: the training model itself, temperature 0.3, 16,384 tokens,
		// and the model adapter's default top-p of 0.9.
		// (No model or base URL of its own: under gate.tools_checks authors the screen is then the
		// Agent's model, the training model.)
		screen = Role{APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 16384, Temperature: 0.3, TopP: 0.9, Thinking: ThinkingDefault}
	}
	return LLM{
		Designer: Role{BaseURL: p.baseURL, Model: p.model, APIKeyEnv: "OPENAI_API_KEY", MaxTokens: designerTokens,
			Temperature: 0.6, TopP: 0.95, TopK: 20, Thinking: designerThinking},
		Agent: Role{BaseURL: p.baseURL, Model: p.model, APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 8192,
			Temperature: 0.6, TopP: 0.95, TopK: 20, Thinking: agentThinking},
		Screen:            screen,
		MaxInFlight:       0,
		ServerMaxInFlight: 1024,
		TimeoutSeconds:    600,
		MaxRetries:        6,
		ToolChoice:        ToolChoiceNone,
		Server:            ServerAuto,
	}
}

// ToolChoice is llm.tool_choice (see LLM.ToolChoice).
type ToolChoice string

// The llm.tool_choice values.
const (
	// ToolChoiceNone sends tool_choice "none" beside the tools.
	ToolChoiceNone ToolChoice = "none"
	// ToolChoiceOmit sends the tools without a tool_choice.
	ToolChoiceOmit ToolChoice = "omit"
)

// ToolChoiceValues lists every llm.tool_choice value.
func ToolChoiceValues() []ToolChoice { return []ToolChoice{ToolChoiceNone, ToolChoiceOmit} }

func init() { registerEnum(ToolChoiceValues()) }
