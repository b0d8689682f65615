package schemas

// EvalResultRow is one sample of one benchmark item answered by the Agent and scored (table
// `eval_results`, partitioned by the step whose weights answered; one fragment per benchmark chunk, and
// one per benchmark an official harness scored, imported by `spade eval import`: only step, bench,
// item_id, kind, sample, score, extracted, detail and weights_version are set on those rows).
type EvalResultRow struct {
	// Step is the step whose weights answered (stage.WeightsVersion of the step, or --weights).
	Step int64 `parquet:"step"`
	// Bench is the benchmark's name; ItemID its item.
	Bench  string `parquet:"bench"`
	ItemID string `parquet:"item_id"`
	// Kind is the benchmark's kind (math, choice, code, function_call, env_pool; external for results an
	// official harness scored, imported by `spade eval import`).
	Kind BenchKind `parquet:"kind"`
	// Sample numbers the sample of the item, 0 .. samples-1.
	Sample int32 `parquet:"sample"`
	// Score is the sample's score in [0, 1] (1 = correct; code: every test passed).
	Score float64 `parquet:"score"`
	// Extracted is what the scorer read from the response (the boxed answer, the option letter, the
	// program, the calls as JSON); empty when nothing could be extracted.
	Extracted string `parquet:"extracted"`
	// Detail says why the score is what it is ("equal after normalisation", "sympy: equivalent",
	// "test 3 of 10 failed: wrong output", "call error: ..."); one line.
	Detail string `parquet:"detail"`
	// Response is the Agent's text (tool calls appended as JSON for function_call items); for env_pool,
	// the episode's transcript (play.Transcript: one line per observation, action or parse error).
	Response string `parquet:"response"`
	// PromptSHA256 is the hex SHA-256 of the request body (the replay key of llm_calls).
	PromptSHA256 string `parquet:"prompt_sha256"`
	// CallID is the llm_calls row of the sample.
	CallID string `parquet:"call_id"`
	// ShuffleSeed is the seed that ordered the options (choice items; 0 otherwise).
	ShuffleSeed int64 `parquet:"shuffle_seed"`
	// PromptTokens and CompletionTokens are the call's usage (0 when the server reported none).
	PromptTokens     int64 `parquet:"prompt_tokens"`
	CompletionTokens int64 `parquet:"completion_tokens"`
	// LatencyMS is the call's wall time in milliseconds.
	LatencyMS int64 `parquet:"latency_ms"`
	// WeightsVersion is the served weights that answered ("" = the base model).
	WeightsVersion string `parquet:"weights_version"`
	// Model is the model name the request named.
	Model string `parquet:"model"`
	// Temperature, TopP and MaxTokens are the sampling parameters sent.
	Temperature float64 `parquet:"temperature"`
	TopP        float64 `parquet:"top_p"`
	MaxTokens   int32   `parquet:"max_tokens"`
	// Error is the call's failure (the sample scores 0); empty when the call succeeded.
	Error string `parquet:"error"`
}

// EvalResultsSpec describes the eval_results table.
var EvalResultsSpec = register("eval_results", 1, true, EvalResultRow{})

// Validate implements Row.
func (r EvalResultRow) Validate() error {
	c := checks{table: "eval_results"}
	c.nonNegative("step", r.Step)
	c.required("bench", r.Bench)
	c.required("item_id", r.ItemID)
	enum(&c, "kind", r.Kind, BenchKindValues())
	c.nonNegative("sample", int64(r.Sample))
	c.unit("score", r.Score)
	c.nonNegative("prompt_tokens", r.PromptTokens)
	c.nonNegative("completion_tokens", r.CompletionTokens)
	c.nonNegative("latency_ms", r.LatencyMS)
	for col, v := range map[string]string{"extracted": r.Extracted, "detail": r.Detail, "response": r.Response, "error": r.Error} {
		c.utf8(col, v)
	}
	return c.err
}
