package llm

import (
	"encoding/json"
	"fmt"
)

// Server is which inference server a role talks to (llm.server): its request extras and response
// layout differ.
type Server string

// The servers.
const (
	// ServerVLLM is vLLM (0.10.2 or later): return_token_ids on chat, the top-level prompt_token_ids and
	// choices[].token_ids, /v1/completions with a token-id prompt, /tokenize with a prompt or messages.
	ServerVLLM Server = "vllm"
	// ServerSGLang is SGLang (0.5.13 or later): return_prompt_token_ids and return_meta_info on chat,
	// choices[].prompt_token_ids and choices[].meta_info.output_token_logprobs, the native /generate
	// with input_ids and return_logprob, /tokenize with a prompt.
	ServerSGLang Server = "sglang"
)

// DetectServer reads which server answered GET /v1/models from the owner it names for its models:
// SGLang writes "sglang", vLLM "vllm"; any other server is taken for vLLM's layout, the OpenAI-compatible
// one most servers copy.
func DetectServer(ownedBy string) Server {
	if ownedBy == "sglang" {
		return ServerSGLang
	}
	return ServerVLLM
}

// MetaInfo is the part of SGLang's meta_info this client reads: the sampled tokens with their
// log-probs ([logprob, token_id, text] per token, or objects), the output ids, the finish reason and the
// token counts.
type MetaInfo struct {
	OutputTokenLogprobs []json.RawMessage `json:"output_token_logprobs,omitempty"`
	OutputIDs           []int64           `json:"output_ids,omitempty"`
	FinishReason        json.RawMessage   `json:"finish_reason,omitempty"`
	PromptTokens        int64             `json:"prompt_tokens,omitempty"`
	CompletionTokens    int64             `json:"completion_tokens,omitempty"`
}

// sampled returns the ids and log-probs of meta_info.output_token_logprobs (nil, nil when absent).
func (m *MetaInfo) sampled() ([]int64, []float64, error) {
	if m == nil || len(m.OutputTokenLogprobs) == 0 {
		if m != nil && len(m.OutputIDs) > 0 {
			return m.OutputIDs, nil, nil
		}
		return nil, nil, nil
	}
	ids := make([]int64, len(m.OutputTokenLogprobs))
	lps := make([]float64, len(m.OutputTokenLogprobs))
	for i, raw := range m.OutputTokenLogprobs {
		var tuple []json.RawMessage
		if json.Unmarshal(raw, &tuple) == nil && len(tuple) >= 2 {
			if err := json.Unmarshal(tuple[0], &lps[i]); err != nil {
				return nil, nil, fmt.Errorf("meta_info.output_token_logprobs[%d]: logprob: %w", i, err)
			}
			if err := json.Unmarshal(tuple[1], &ids[i]); err != nil {
				return nil, nil, fmt.Errorf("meta_info.output_token_logprobs[%d]: token id: %w", i, err)
			}
			continue
		}
		var obj struct {
			TokenID *int64   `json:"token_id"`
			Logprob *float64 `json:"logprob"`
		}
		if err := json.Unmarshal(raw, &obj); err != nil || obj.TokenID == nil || obj.Logprob == nil {
			return nil, nil, fmt.Errorf("meta_info.output_token_logprobs[%d]: neither [logprob, token_id, text] nor {token_id, logprob}: %s", i, raw)
		}
		ids[i], lps[i] = *obj.TokenID, *obj.Logprob
	}
	return ids, lps, nil
}

// finish is meta_info.finish_reason's type ("stop", "length", "abort"), from {"type": ...} or a string.
func (m *MetaInfo) finish() string {
	if m == nil || len(m.FinishReason) == 0 {
		return ""
	}
	var obj struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(m.FinishReason, &obj) == nil && obj.Type != "" {
		return obj.Type
	}
	var s string
	json.Unmarshal(m.FinishReason, &s)
	return s
}

// GenerateRequestBody is SGLang's native POST /generate body for a token-in-token-out call.
type GenerateRequestBody struct {
	InputIDs       []int64        `json:"input_ids"`
	SamplingParams SamplingParams `json:"sampling_params"`
	ReturnLogprob  bool           `json:"return_logprob"`
}

// SamplingParams are SGLang's sampling parameters of a /generate call.
type SamplingParams struct {
	MaxNewTokens int      `json:"max_new_tokens,omitempty"`
	Temperature  *float64 `json:"temperature,omitempty"`
	TopP         *float64 `json:"top_p,omitempty"`
	TopK         int      `json:"top_k,omitempty"`
	SamplingSeed int64    `json:"sampling_seed"`
}

// GenerateResponseBody is the part of SGLang's /generate answer this client reads.
type GenerateResponseBody struct {
	Text      string    `json:"text"`
	OutputIDs []int64   `json:"output_ids,omitempty"`
	MetaInfo  *MetaInfo `json:"meta_info"`
}

// outcomeFromGenerate fills an Outcome from a decoded /generate answer; the prompt ids are the ids sent
// (the client sets them).
func outcomeFromGenerate(body *GenerateResponseBody) (Outcome, error) {
	if body.MetaInfo == nil {
		return Outcome{}, fmt.Errorf("/generate answer has no meta_info")
	}
	ids, lps, err := body.MetaInfo.sampled()
	if err != nil {
		return Outcome{}, err
	}
	if ids == nil {
		ids = body.OutputIDs
	}
	finish := body.MetaInfo.finish()
	if finish == "abort" {
		return Outcome{}, fmt.Errorf("SGLang aborted the generation (finish_reason abort)")
	}
	return Outcome{Text: body.Text, FinishReason: finish, CompletionTokenIDs: ids, CompletionLogprobs: lps,
		PromptTokens: body.MetaInfo.PromptTokens, CompletionTokens: max(body.MetaInfo.CompletionTokens, int64(len(ids)))}, nil
}
