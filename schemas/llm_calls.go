package schemas

// LLMCallRow is one Chat Completions call, with the exact tokens sampled so GRPO never re-tokenizes
// (table `llm_calls`, partitioned by step). The replay backend answers from these rows.
type LLMCallRow struct {
	// Step is the step of the stage that made the call.
	Step int64 `parquet:"step"`
	// CallID is unique within the run.
	CallID string `parquet:"call_id"`
	// Role is designer, agent, screen or hint.
	Role Role `parquet:"role"`
	// RequestHash is the hex sha256 of the canonical request JSON; replay looks calls up by it.
	RequestHash string `parquet:"request_hash"`
	// Request is the request body sent, as JSON (messages, sampling parameters, tools).
	Request string `parquet:"request"`
	// ResponseText is the assistant message content (empty for a pure tool call).
	ResponseText string `parquet:"response_text"`
	// ToolCalls is the assistant's tool calls as a JSON array; empty when none.
	ToolCalls string `parquet:"tool_calls"`
	// PromptTokenIDs are the prompt's token ids as the server tokenized them; null when not returned.
	PromptTokenIDs []int32 `parquet:"prompt_token_ids,list"`
	// CompletionTokenIDs are the sampled token ids; null when the server did not return them.
	CompletionTokenIDs []int32 `parquet:"completion_token_ids,list"`
	// CompletionLogprobs are the behaviour log-probabilities of the sampled tokens; null when absent.
	CompletionLogprobs []float32 `parquet:"completion_logprobs,list"`
	// FinishReason is the server's finish_reason (stop, length, tool_calls, ...).
	FinishReason string `parquet:"finish_reason"`
	// PromptTokens is usage.prompt_tokens.
	PromptTokens int64 `parquet:"prompt_tokens"`
	// CompletionTokens is usage.completion_tokens.
	CompletionTokens int64 `parquet:"completion_tokens"`
	// LatencyMS is the wall time of the call including retries, in milliseconds.
	LatencyMS float64 `parquet:"latency_ms"`
	// Model is the model name sent.
	Model string `parquet:"model"`
	// WeightsVersion is the weights version the server answered with (the LoRA adapter name, or the model).
	WeightsVersion string `parquet:"weights_version"`
	// Error says why the call failed after retries; empty on success.
	Error string `parquet:"error"`
}

// LLMCallsSpec describes the llm_calls table.
var LLMCallsSpec = register("llm_calls", 1, true, LLMCallRow{})

// Validate implements Row.
func (r LLMCallRow) Validate() error {
	c := checks{table: "llm_calls"}
	c.nonNegative("step", r.Step)
	c.required("call_id", r.CallID)
	enum(&c, "role", r.Role, RoleValues())
	c.required("request", r.Request)
	c.utf8("response_text", r.ResponseText)
	if r.CompletionLogprobs != nil && len(r.CompletionLogprobs) != len(r.CompletionTokenIDs) {
		c.fail("completion_logprobs", "has %d entries for %d completion tokens", len(r.CompletionLogprobs), len(r.CompletionTokenIDs))
	}
	return c.err
}
