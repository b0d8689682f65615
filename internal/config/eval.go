package config

import "strings"

// Eval configures the downstream evaluation (`spade eval`, and `spade run` every eval.every steps). Zero
// values take each benchmark kind's defaults, the authors' evaluation settings (docs/evaluation.md).
type Eval struct {
	// Every evaluates the Agent every this many steps of `spade run`; 0 never does. Step 0 is included,
	// and the evaluation is the step's last stage.
	Every int `json:"every" range:">=0"`
	// Benches is the comma-separated list of imported benchmarks to evaluate (`spade bench import`). It is
	// what `spade run` and `spade eval` without --bench evaluate, required when eval.every is set.
	Benches string `json:"benches"`
	// Samples is the number of samples per item; 0 takes the kind's default. The defaults are math 64,
	// choice 8, code 1, function_call 1 and env_pool 1.
	Samples int `json:"samples" range:">=0"`
	// Temperature overrides the kind's sampling temperature when > 0; 0 takes the kind's default. A
	// temperature of 0 cannot be asked for here (the default of function calls and env pools is 0).
	Temperature float64 `json:"temperature" range:">=0"`
	// TopP overrides the kind's top-p when > 0; 0 takes the kind's default.
	TopP float64 `json:"top_p" range:"[0,1]"`
	// MaxTokens overrides the kind's completion-token cap when > 0; 0 takes the kind's default.
	MaxTokens int `json:"max_tokens" range:">=0"`
	// ChunkItems is how many items one committed chunk holds; 0 takes 100. A chunk is the unit of resume
	// and sharding.
	ChunkItems int `json:"chunk_items" range:">=0"`
}

// validate checks that a run that evaluates names what to evaluate.
func (e Eval) validate(*Config) error {
	if e.Every > 0 && strings.Trim(e.Benches, " ,") == "" {
		return invalidf("config: key \"eval.benches\" is empty but eval.every is %d: name the imported benchmarks to evaluate", e.Every)
	}
	return nil
}

// presetEval evaluates nothing during `spade run`, with every kind's defaults.
func presetEval(presetSpec) Eval { return Eval{} }
