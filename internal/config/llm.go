package config

// LLM configures the generation backends (internal/llm): the model behind each role and the client that
// calls them. The Designer and the Agent share the trained weights θ; the hint writer is the Designer's
// model sampled with generate.hint_temperature and generate.hint_max_tokens.
type LLM struct {
	// Designer is the model that writes the environment programs (stages/generate).
	Designer Role `json:"designer"`
	// Agent is the model that plays the environments (stages/rollout) and is evaluated (stages/eval).
	Agent Role `json:"agent"`
	// Screen is the tools setting's screen model of the gate (the tools_screen check); with neither a base
	// URL nor a model the check is skipped, and an empty one of the two takes the Agent's.
	Screen Role `json:"screen"`
	// MaxInFlight bounds the model calls in flight at once over every role (keep the server's
	// --max-num-seqs about as large).
	MaxInFlight int `json:"max_in_flight" range:">=1"`
	// TimeoutSeconds bounds one HTTP attempt of a call, in seconds; a slower attempt fails the call with
	// a timeout (timeouts are not retried).
	TimeoutSeconds int `json:"timeout_seconds" range:">0"`
	// MaxRetries is how many times a call is retried after a 429, a 5xx or a connection error, with
	// jittered exponential backoff; 0 does not retry.
	MaxRetries int `json:"max_retries" range:">=0"`
	// PromptFile, when set, is a template file used instead of the embedded Designer prompt of the
	// setting (stages/generate.PromptData lists what the template gets).
	PromptFile string `json:"prompt_file"`
}

// Role configures the model behind one role (llm.designer, llm.agent or llm.screen).
type Role struct {
	// BaseURL is the role's OpenAI-compatible endpoint (http://host:8000/v1), or replay:RUN to answer
	// every call from the llm_calls a recorded run holds; empty takes $OPENAI_BASE_URL when the client
	// starts (the presets copy it at spade init).
	BaseURL string `json:"base_url"`
	// Model is the served model name the role calls (the base model; trained weights published as a
	// LoRA adapter are called by their own name instead).
	Model string `json:"model"`
	// APIKeyEnv names the environment variable that holds the API key sent as a bearer token; empty
	// sends none.
	APIKeyEnv string `json:"api_key_env"`
	// MaxTokens caps the completion tokens of one call of the role (the authors' launch scripts'
	// --spade-env-max-tokens 16384, 20000 at 8B, and --spade-actor-max-tokens 8192).
	MaxTokens int `json:"max_tokens" range:">=1"`
	// Temperature is the role's sampling temperature; 0 samples greedily (the authors' launch scripts'
	// --spade-env-temperature and --spade-actor-temperature, 0.6).
	Temperature float64 `json:"temperature" range:">=0"`
	// TopP is the nucleus sampling mass: each token is drawn from the smallest set of likeliest tokens
	// whose probabilities add up to it; 1 keeps every token (the authors' 0.95).
	TopP float64 `json:"top_p" range:"(0,1]"`
	// TopK keeps the k most likely tokens at each sampling step; 0 does not send it (the server's default;
	// the authors' 20).
	TopK int `json:"top_k" range:">=0"`
}

// validate has no rule beyond the declared ranges.
func (LLM) validate(*Config) error { return nil }

// presetLLM is the sampling of the authors' launch scripts for the Designer and the Agent (temperature
// 0.6, top-p 0.95, top-k 20; 16,384 Designer tokens, 20,000 at 8B; 8,192 Agent tokens), a greedy screen,
// and the client limits: 256 calls in flight, 10 minutes per attempt, 6 retries.
func presetLLM(p presetSpec) LLM {
	designerTokens := 16384
	if p.size == "qwen3-8b" {
		designerTokens = 20000
	}
	return LLM{
		Designer: Role{BaseURL: p.baseURL, Model: p.model, APIKeyEnv: "OPENAI_API_KEY", MaxTokens: designerTokens,
			Temperature: 0.6, TopP: 0.95, TopK: 20},
		Agent: Role{BaseURL: p.baseURL, Model: p.model, APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 8192,
			Temperature: 0.6, TopP: 0.95, TopK: 20},
		Screen:         Role{APIKeyEnv: "OPENAI_API_KEY", MaxTokens: 2048, Temperature: 0, TopP: 1.0},
		MaxInFlight:    256,
		TimeoutSeconds: 600,
		MaxRetries:     6,
	}
}
