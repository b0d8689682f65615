package llm

import (
	"encoding/json"
	"fmt"
)

// ChatRequestBody is the JSON body of POST /chat/completions as this client sends it. Field order is
// fixed, so equal requests encode to equal bytes (the replay key). Pointer fields are always set except
// for a Plain role (see RoleSettings.Plain), where they are left out.
type ChatRequestBody struct {
	Model      string            `json:"model"`
	Messages   []Message         `json:"messages"`
	Tools      []json.RawMessage `json:"tools,omitempty"`
	ToolChoice string            `json:"tool_choice,omitempty"`
	MaxTokens  int               `json:"max_tokens,omitempty"`
	// MaxCompletionTokens replaces max_tokens for a Plain role (hosted APIs reject max_tokens for
	// reasoning models).
	MaxCompletionTokens int      `json:"max_completion_tokens,omitempty"`
	Temperature         *float64 `json:"temperature,omitempty"`
	TopP                *float64 `json:"top_p,omitempty"`
	// TopK is vLLM's top-k sampling; omitted when 0 (RoleSettings.TopK).
	TopK        int   `json:"top_k,omitempty"`
	Seed        int64 `json:"seed"`
	Logprobs    *bool `json:"logprobs,omitempty"`
	TopLogprobs *int  `json:"top_logprobs,omitempty"`
	// ReturnTokenIDs is vLLM's extension returning prompt_token_ids and choices[].token_ids.
	ReturnTokenIDs *bool `json:"return_token_ids,omitempty"`
}

// ChatResponseBody is the part of a Chat Completions response this client reads, in vLLM's shape.
type ChatResponseBody struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Model   string       `json:"model"`
	Choices []ChatChoice `json:"choices"`
	Usage   *Usage       `json:"usage,omitempty"`
	// PromptTokenIDs is returned by vLLM when return_token_ids is set.
	PromptTokenIDs []int64 `json:"prompt_token_ids,omitempty"`
}

// ChatChoice is one choice of a response.
type ChatChoice struct {
	Index        int             `json:"index"`
	Message      ResponseMessage `json:"message"`
	Logprobs     *ChoiceLogprobs `json:"logprobs,omitempty"`
	FinishReason string          `json:"finish_reason"`
	// TokenIDs is vLLM's list of sampled token ids.
	TokenIDs []int64 `json:"token_ids,omitempty"`
}

// ResponseMessage is the assistant message of a choice; Content is null when only tools are called.
type ResponseMessage struct {
	Role      string     `json:"role"`
	Content   *string    `json:"content"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
}

// ChoiceLogprobs holds one entry per sampled token.
type ChoiceLogprobs struct {
	Content []TokenLogprob `json:"content"`
}

// TokenLogprob is a sampled token and its logprob.
type TokenLogprob struct {
	Token       string         `json:"token"`
	Logprob     float64        `json:"logprob"`
	Bytes       []int          `json:"bytes,omitempty"`
	TopLogprobs []TokenLogprob `json:"top_logprobs"`
}

// Usage is the server's token accounting.
type Usage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// outcomeFromBody fills an Outcome from a decoded response; it fails on a response without choices.
func outcomeFromBody(body *ChatResponseBody) (Outcome, error) {
	if len(body.Choices) == 0 {
		return Outcome{}, fmt.Errorf("response has no choices")
	}
	choice := body.Choices[0]
	out := Outcome{
		ToolCalls:          choice.Message.ToolCalls,
		FinishReason:       choice.FinishReason,
		PromptTokenIDs:     body.PromptTokenIDs,
		CompletionTokenIDs: choice.TokenIDs,
		Model:              body.Model,
	}
	if choice.Message.Content != nil {
		out.Text = *choice.Message.Content
	}
	if choice.Logprobs != nil && choice.Logprobs.Content != nil {
		out.CompletionLogprobs = make([]float64, len(choice.Logprobs.Content))
		for i, tok := range choice.Logprobs.Content {
			out.CompletionLogprobs[i] = tok.Logprob
		}
	}
	if body.Usage != nil {
		out.PromptTokens = body.Usage.PromptTokens
		out.CompletionTokens = body.Usage.CompletionTokens
	}
	return out, nil
}
