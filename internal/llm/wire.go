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
	// ReturnPromptTokenIDs and ReturnMetaInfo are SGLang's: choices[].prompt_token_ids and
	// choices[].meta_info (the sampled ids and log-probs).
	ReturnPromptTokenIDs *bool `json:"return_prompt_token_ids,omitempty"`
	ReturnMetaInfo       *bool `json:"return_meta_info,omitempty"`
	// ChatTemplateKwargs are the chat template's extra variables (Request.ChatTemplateKwargs), read by
	// vLLM and SGLang alike, e.g. {"enable_thinking": false}; omitted when empty.
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
}

// CompletionRequestBody is the JSON body of POST /completions as this client sends it for a
// token-in-token-out call: the prompt is a list of token ids (a vLLM extension of the OpenAI body, which
// takes it verbatim), with vLLM's sampling fields. Logprobs 0 returns the sampled tokens' log-probs
// (choices[].logprobs.token_logprobs); return_token_ids returns choices[].prompt_token_ids and token_ids.
type CompletionRequestBody struct {
	Model          string   `json:"model"`
	Prompt         []int64  `json:"prompt"`
	MaxTokens      int      `json:"max_tokens,omitempty"`
	Temperature    *float64 `json:"temperature,omitempty"`
	TopP           *float64 `json:"top_p,omitempty"`
	TopK           int      `json:"top_k,omitempty"`
	Seed           int64    `json:"seed"`
	Logprobs       *int     `json:"logprobs,omitempty"`
	ReturnTokenIDs *bool    `json:"return_token_ids,omitempty"`
}

// CompletionResponseBody is the part of a /completions response this client reads, in vLLM's shape.
type CompletionResponseBody struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Model   string             `json:"model"`
	Choices []CompletionChoice `json:"choices"`
	Usage   *Usage             `json:"usage,omitempty"`
}

// CompletionChoice is one choice of a /completions response.
type CompletionChoice struct {
	Index        int                `json:"index"`
	Text         string             `json:"text"`
	Logprobs     *CompletionLogprob `json:"logprobs,omitempty"`
	FinishReason string             `json:"finish_reason"`
	// PromptTokenIDs and TokenIDs are vLLM's, returned when return_token_ids is set.
	PromptTokenIDs []int64 `json:"prompt_token_ids,omitempty"`
	TokenIDs       []int64 `json:"token_ids,omitempty"`
}

// CompletionLogprob is the legacy completions log-prob shape: one entry per sampled token.
type CompletionLogprob struct {
	Tokens        []string             `json:"tokens"`
	TokenLogprobs []float64            `json:"token_logprobs"`
	TopLogprobs   []map[string]float64 `json:"top_logprobs,omitempty"`
	TextOffset    []int                `json:"text_offset,omitempty"`
}

// TokenizeRequestBody is the JSON body of vLLM's POST /tokenize as this client sends it.
type TokenizeRequestBody struct {
	Model            string `json:"model"`
	Prompt           string `json:"prompt"`
	AddSpecialTokens bool   `json:"add_special_tokens"`
}

// TokenizeChatRequestBody is vLLM's POST /tokenize body for a conversation: the server renders its chat
// template over the messages and tokenizes the text (add_special_tokens false: the template holds them).
type TokenizeChatRequestBody struct {
	Model               string            `json:"model"`
	Messages            []Message         `json:"messages"`
	Tools               []json.RawMessage `json:"tools,omitempty"`
	AddGenerationPrompt bool              `json:"add_generation_prompt"`
	AddSpecialTokens    bool              `json:"add_special_tokens"`
	ChatTemplateKwargs  map[string]any    `json:"chat_template_kwargs,omitempty"`
}

// TokenizeResponseBody is the part of vLLM's /tokenize response this client reads.
type TokenizeResponseBody struct {
	Count  int     `json:"count"`
	Tokens []int64 `json:"tokens"`
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
	// PromptTokenIDs and MetaInfo are SGLang's, per choice (return_prompt_token_ids, return_meta_info).
	PromptTokenIDs []int64   `json:"prompt_token_ids,omitempty"`
	MetaInfo       *MetaInfo `json:"meta_info,omitempty"`
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
	// SGLang's layout: the prompt ids in the choice, the sampled ids and log-probs in its meta_info
	// (whose log-probs are the sampled tokens' own, as vLLM's logprobs.content are).
	if out.PromptTokenIDs == nil {
		out.PromptTokenIDs = choice.PromptTokenIDs
	}
	if out.CompletionTokenIDs == nil && choice.MetaInfo != nil {
		ids, lps, err := choice.MetaInfo.sampled()
		if err != nil {
			return Outcome{}, err
		}
		out.CompletionTokenIDs = ids
		if lps != nil {
			out.CompletionLogprobs = lps
		}
	}
	if body.Usage != nil {
		out.PromptTokens = body.Usage.PromptTokens
		out.CompletionTokens = body.Usage.CompletionTokens
	}
	return out, nil
}

// outcomeFromCompletion fills an Outcome from a decoded /completions response.
func outcomeFromCompletion(body *CompletionResponseBody) (Outcome, error) {
	if len(body.Choices) == 0 {
		return Outcome{}, fmt.Errorf("response has no choices")
	}
	choice := body.Choices[0]
	out := Outcome{
		Text:               choice.Text,
		FinishReason:       choice.FinishReason,
		PromptTokenIDs:     choice.PromptTokenIDs,
		CompletionTokenIDs: choice.TokenIDs,
		Model:              body.Model,
	}
	if choice.Logprobs != nil && choice.Logprobs.TokenLogprobs != nil {
		out.CompletionLogprobs = append([]float64(nil), choice.Logprobs.TokenLogprobs...)
	}
	if body.Usage != nil {
		out.PromptTokens = body.Usage.PromptTokens
		out.CompletionTokens = body.Usage.CompletionTokens
	}
	return out, nil
}

// outcomeFromTokenize fills an Outcome from a decoded /tokenize response: the tokens are the prompt ids.
func outcomeFromTokenize(body *TokenizeResponseBody) (Outcome, error) {
	if body.Tokens == nil {
		return Outcome{}, fmt.Errorf("tokenize response has no tokens")
	}
	return Outcome{PromptTokenIDs: body.Tokens, PromptTokens: int64(len(body.Tokens))}, nil
}
