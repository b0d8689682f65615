package config

// Eval configures the downstream evaluation (`spade eval`, and `spade run` every eval.every steps). Zero
// values take each benchmark kind's defaults, the authors' evaluation settings (README, "Evaluation").
type Eval struct {
	// Every evaluates the Agent every this many steps during `spade run` (0: never).
	Every int `json:"every"`
	// Benches is the comma-separated list of imported benchmarks evaluated (by `spade run`, and by
	// `spade eval` without --bench).
	Benches string `json:"benches"`
	// Samples is the number of samples per item (0: the kind's default: math 64, choice 8, code 1,
	// function_call 1).
	Samples int `json:"samples"`
	// Temperature, TopP and MaxTokens override the kind's sampling defaults when set (> 0; a temperature
	// of 0 cannot be asked for here: use TopP or the kind's default, which is 0 for function calls).
	Temperature float64 `json:"temperature"`
	TopP        float64 `json:"top_p"`
	MaxTokens   int     `json:"max_tokens"`
	// ChunkItems is how many items one committed chunk holds (0: 100): the unit of resume and sharding.
	ChunkItems int `json:"chunk_items"`
}
