package llm

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spadekit/spade/schemas"
)

// ReplayPrefix marks a base URL that is answered from a recorded run: "replay:<run>".
const ReplayPrefix = "replay:"

// RoleSettings configures one role's endpoint and sampling parameters.
type RoleSettings struct {
	// BaseURL is the OpenAI-compatible root including /v1 (http://host:8000/v1), a comma-separated
	// list of such roots (replicas of one model: see Client.Session), or "replay:<run>".
	BaseURL string
	// Model is the served model name sent in every request.
	Model string
	// APIKeyEnv names the environment variable holding the API key; empty or unset sends no key.
	APIKeyEnv string
	// MaxTokens bounds the completion length in tokens (Table 5: designer 16,384, agent 8,192).
	MaxTokens int
	// Temperature and TopP are the sampling parameters sent with every request.
	Temperature float64
	// TopP is nucleus sampling's probability mass in (0, 1].
	TopP float64
	// TopK keeps the k most likely tokens at each sampling step; sent as `top_k` (a vLLM extension of
	// the OpenAI body) only when > 0 and the role is not Plain, so 0 leaves requests as they were.
	TopK int
	// WeightsVersion names the weights that answer (a LoRA adapter name); recorded with every call.
	WeightsVersion string
	// Plain sends only the portable OpenAI fields: no logprobs, top_logprobs or return_token_ids,
	// max_completion_tokens instead of max_tokens, and temperature and top_p only when not 1. For a
	// hosted model serving a frozen Designer, whose calls are never trained (token columns stay null).
	Plain bool
	// ChatTemplateKwargs are sent as chat_template_kwargs with every chat request of the role (the role's
	// thinking setting) unless the request carries its own; nil sends none.
	ChatTemplateKwargs map[string]any
	// Server is the server the role talks to (llm.server); empty detects it at Client.Check from GET
	// /v1/models (owned_by), vLLM's layout until then.
	Server Server
}

// Settings configures a Client.
type Settings struct {
	// Roles holds the settings of each role in use; a role not present cannot be called.
	Roles map[schemas.Role]RoleSettings
	// MaxInFlight bounds the calls in flight over all roles (llm.max_in_flight); 0 or less bounds
	// them only per server, so the calls in flight follow the plays (each play has one at a time).
	MaxInFlight int
	// ServerMaxInFlight bounds the calls in flight to each server of a role's list
	// (llm.server_max_in_flight, default 1024).
	ServerMaxInFlight int
	// Timeout bounds one HTTP attempt; a call slower than this fails with a timeout (default 10 min).
	Timeout time.Duration
	// MaxRetries is how many times a call is retried after a 429, a 5xx or a connection error (default 6).
	MaxRetries int
	// BackoffBase and BackoffMax shape the retry delays: full jitter over min(max, base·2^(n−1)).
	BackoffBase time.Duration
	// BackoffMax caps one retry delay.
	BackoffMax time.Duration
	// MaxResponseBytes bounds one response body; a larger one is a failure (default 8 MiB).
	MaxResponseBytes int64
	// Seed is the run seed; each request's sampling seed derives from it and the call's key.
	Seed int64
	// OmitToolChoice leaves tool_choice out of a chat request with tools (llm.tool_choice omit, for
	// SGLang); otherwise it is "none" (vLLM). Either way the calls are parsed from the text.
	OmitToolChoice bool
}

// withDefaults fills zero fields with the documented defaults.
func (s Settings) withDefaults() Settings {
	if s.MaxInFlight < 0 {
		s.MaxInFlight = 0
	}
	if s.ServerMaxInFlight <= 0 {
		s.ServerMaxInFlight = 1024
	}
	if s.Timeout <= 0 {
		s.Timeout = 10 * time.Minute
	}
	if s.MaxRetries < 0 {
		s.MaxRetries = 0
	} else if s.MaxRetries == 0 {
		s.MaxRetries = 6
	}
	if s.BackoffBase <= 0 {
		s.BackoffBase = 500 * time.Millisecond
	}
	if s.BackoffMax <= 0 {
		s.BackoffMax = 30 * time.Second
	}
	if s.MaxResponseBytes <= 0 {
		s.MaxResponseBytes = 8 << 20
	}
	return s
}

// connections is how many calls may be in flight to one host at once: what the idle connection pool
// keeps room for.
func (s Settings) connections() int {
	if s.MaxInFlight > 0 {
		return min(s.MaxInFlight, s.ServerMaxInFlight)
	}
	return s.ServerMaxInFlight
}

// Message is one Chat Completions message.
type Message struct {
	// Role is system, user, assistant or tool.
	Role string `json:"role"`
	// Content is the message text.
	Content string `json:"content"`
	// ToolCalls are the assistant's tool calls, if any.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID answers a tool call (role tool).
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// ToolCall is one OpenAI function call made by the model.
type ToolCall struct {
	// ID identifies the call within the conversation.
	ID string `json:"id"`
	// Type is "function".
	Type string `json:"type"`
	// Function holds the name and the JSON-encoded arguments, as the model wrote them.
	Function FunctionCall `json:"function"`
}

// FunctionCall is the function part of a ToolCall; Arguments is JSON text that may be invalid.
type FunctionCall struct {
	// Name is the called function's name.
	Name string `json:"name"`
	// Arguments is the JSON text of the arguments, unparsed.
	Arguments string `json:"arguments"`
}

// Request is one chat call as a stage describes it.
type Request struct {
	// Role selects the settings and system prompt family.
	Role schemas.Role
	// Step is the training step the call belongs to.
	Step int64
	// Key identifies the call uniquely within (role, step), e.g. "env=ab12/ep=3/turn=7"; it fixes the
	// call id and the sampling seed, so it must not depend on scheduling.
	Key string
	// Messages is the conversation so far.
	Messages []Message
	// Tools are OpenAI tool schemas (each a JSON object), sent verbatim.
	Tools []json.RawMessage
	// PromptIDs, when not nil, makes the call a token-in-token-out one (rollout.token_io = tokens): it is
	// sent to POST /completions with these token ids as the prompt (vLLM takes a list of ids as `prompt`)
	// instead of Messages to /chat/completions; Messages and Tools must then be empty.
	PromptIDs []int64
	// ChatTemplateKwargs, when not nil, is sent as the Chat Completions body's chat_template_kwargs
	// (e.g. {"enable_thinking": false} for Qwen3's hybrid template) instead of the role's; nil sends the
	// role's (RoleSettings.ChatTemplateKwargs), and none when the role has none, so a request without
	// them encodes, and replays, as before. Ignored by a token-id call (PromptIDs).
	ChatTemplateKwargs map[string]any
	// MaxTokens, when > 0 and below the role's max_tokens, lowers this call's max_tokens to it (the Agent's
	// answer must fit in what is left of the context); 0 sends the role's, so a request without it
	// encodes, and replays, as before.
	MaxTokens int
}

// maxTokens is the max_tokens a call sends: the role's, or the request's lower limit.
func (r *Request) maxTokens(role int) int {
	if r.MaxTokens > 0 && (role <= 0 || r.MaxTokens < role) {
		return r.MaxTokens
	}
	return role
}

// TokenizeRequest asks the server to tokenize text (vLLM's POST /tokenize, at the server root beside
// /v1, with add_special_tokens false, so no BOS is added). Role, Step and Key identify the call as for
// Request; it is recorded in llm_calls like a completion (the tokens are its prompt_token_ids, it has no
// completion), so a replayed run answers it from the recording.
type TokenizeRequest struct {
	Role schemas.Role
	Step int64
	Key  string
	// Text is tokenized as it is.
	Text string
}

// TokenizeChatRequest asks the server to render its chat template over Messages and tokenize it (vLLM's
// POST /tokenize with messages); Role, Step and Key identify the call as for Request.
type TokenizeChatRequest struct {
	Role schemas.Role
	Step int64
	Key  string
	// Messages are rendered with Tools and, when AddGenerationPrompt, the assistant's generation prompt.
	Messages            []Message
	Tools               []json.RawMessage
	AddGenerationPrompt bool
	// ChatTemplateKwargs are the template's extra variables; nil sends the role's.
	ChatTemplateKwargs map[string]any
}

// Outcome is what a backend returns for one request: the parsed answer or the failure reason.
type Outcome struct {
	// Text is the assistant message content.
	Text string
	// ToolCalls are the assistant's tool calls.
	ToolCalls []ToolCall
	// FinishReason is stop, length or tool_calls as the server said.
	FinishReason string
	// PromptTokenIDs and CompletionTokenIDs are nil when the server did not return them.
	PromptTokenIDs []int64
	// CompletionTokenIDs are the sampled token ids.
	CompletionTokenIDs []int64
	// CompletionLogprobs are the sampled tokens' logprobs, nil when not returned.
	CompletionLogprobs []float64
	// PromptTokens and CompletionTokens are the server's usage counts (0 when absent).
	PromptTokens int64
	// CompletionTokens is the completion's length in tokens.
	CompletionTokens int64
	// Model is the model name the server answered with.
	Model string
	// LatencyMS is the wall time of the call over all attempts, in milliseconds.
	LatencyMS int64
	// Attempts is the number of HTTP attempts made (1 without retries).
	Attempts int
	// Err is the failure reason; empty on success.
	Err string
}

// Call is one recorded call: the request's identity and body plus its Outcome.
type Call struct {
	// CallID is a stable id derived from (role, step, key).
	CallID string
	// Role is the role the call was made under.
	Role schemas.Role
	// Step is the training step.
	Step int64
	// Key is the caller's identity of the call within (role, step).
	Key string
	// RequestHash is the hex SHA-256 of RequestJSON, the replay key.
	RequestHash string
	// RequestJSON is the exact body sent.
	RequestJSON string
	// MaxTokens, Temperature, TopP and Seed are the sampling parameters sent.
	MaxTokens int
	// Temperature is the sampling temperature sent.
	Temperature float64
	// TopP is the nucleus mass sent.
	TopP float64
	// Seed is the per-request sampling seed sent.
	Seed int64
	// WeightsVersion is the role's weights version at the time of the call.
	WeightsVersion string
	Outcome
}

// Completion is the answer a stage gets back from Chat.
type Completion struct {
	// CallID is the id of the recorded llm_calls row.
	CallID string
	Outcome
}

// Failed reports whether the call failed; the reason is in Err.
func (c *Completion) Failed() bool { return c.Err != "" }

// ReplayMissError is returned by Chat when a replayed run has no recorded answer for a request.
type ReplayMissError struct {
	// Run is the recorded run being replayed.
	Run string
	// Role and Step identify the call.
	Role schemas.Role
	// Step is the training step of the call.
	Step int64
	// RequestPrefix is the start of the request body.
	RequestPrefix string
}

func (e *ReplayMissError) Error() string {
	return fmt.Sprintf("llm: replay %s: no recorded %s call at step %d for request %s…", e.Run, e.Role, e.Step, e.RequestPrefix)
}

// ReplayEndError is returned by Chat when a replayed run is asked for a step outside its recording: it
// names the steps the recording covers and that a real endpoint is needed beyond them.
type ReplayEndError struct {
	// Run is the recorded run being replayed (RUN@LAKE of replay:RUN@LAKE).
	Run string
	// Role and Step identify the call.
	Role schemas.Role
	Step int64
	// First and Last are the first and the last step the recording holds calls for.
	First, Last int64
}

func (e *ReplayEndError) Error() string {
	return fmt.Sprintf("step %d is outside the recording: replay %s covers steps %d-%d; other steps need a real endpoint, a run whose llm.designer.base_url and llm.agent.base_url name a server (spade --run NEW init --from RUN@%d --set llm.designer.base_url=URL --set llm.agent.base_url=URL continues one)",
		e.Step, e.Run, e.First, e.Last, e.Last)
}
