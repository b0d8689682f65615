package schemas

// BenchKind says how a benchmark's items are asked and scored (bench_items.kind).
type BenchKind string

// The benchmark kinds (docs/architecture.md, "Evaluation"; docs/evaluation.md has each kind's column
// mapping).
const (
	// BenchMath is a problem with a final answer, scored on the last \boxed{} of the response.
	BenchMath BenchKind = "math"
	// BenchChoice is a multiple-choice question (GPQA layout), options shuffled per sample.
	BenchChoice BenchKind = "choice"
	// BenchCode is a programming problem with stdin/stdout or function-call tests (LiveCodeBench layout).
	BenchCode BenchKind = "code"
	// BenchFunctionCall is a question with function schemas and the expected calls (BFCL layout).
	BenchFunctionCall BenchKind = "function_call"
	// BenchEnvPool is an env program (of an imported pool, or of a run's envs at a step) played by the
	// Agent without its hint through the sandbox, scored by the episode's outcome.
	BenchEnvPool BenchKind = "env_pool"
	// BenchExternal is a benchmark an official harness ran and scored outside spade (BFCL, τ²-bench,
	// ACEBench, LiveCodeBench's lcb_runner, Reasoning Gym's eval script): its eval_results rows are read
	// from the harness's result files by `spade eval import`; it has no bench_items.
	BenchExternal BenchKind = "external"
)

// BenchKindValues lists every BenchKind.
func BenchKindValues() []BenchKind {
	return []BenchKind{BenchMath, BenchChoice, BenchCode, BenchFunctionCall, BenchEnvPool, BenchExternal}
}

// BenchItemRow is one item of an imported benchmark (table `bench_items`, one partition per benchmark,
// stored beside the corpora, not per run).
type BenchItemRow struct {
	// Bench is the benchmark's name as imported (`spade bench import --name`).
	Bench string `parquet:"bench"`
	// ItemID is the item's id, unique within the benchmark.
	ItemID string `parquet:"item_id"`
	// Kind is how the item is asked and scored (math, choice, code, function_call, env_pool; never
	// external, whose results are imported without items).
	Kind BenchKind `parquet:"kind"`
	// Question is the problem text shown to the Agent, UTF-8, non-empty; for env_pool, the env program
	// (never shown: the Agent sees the program's observations).
	Question string `parquet:"question"`
	// Answer is the reference: the final answer (math), the correct option's text (choice), empty for
	// code, the expected calls as a JSON array of {"name": {"arg": [accepted values]}} (function_call).
	Answer string `parquet:"answer"`
	// Options is the JSON array of the choices' texts (choice only; empty otherwise), correct one included.
	Options string `parquet:"options"`
	// Tests is the JSON object {"public": [...], "private": [...]} of test cases (code only), each
	// {"input": str, "output": str, "testtype": "stdin"|"functional"}; empty otherwise.
	Tests string `parquet:"tests"`
	// Functions is the JSON array of the function schemas offered (function_call only); empty otherwise.
	Functions string `parquet:"functions"`
	// Meta is the JSON object of layout details the scorer needs (code: starter_code, func_name;
	// function_call: category simple|multiple|parallel|parallel_multiple; ordered; env_pool: setting,
	// class_name, skill, code_sha256); "{}" when none.
	Meta string `parquet:"meta"`
	// Source is the file the item was imported from (its base name).
	Source string `parquet:"source"`
}

// BenchItemsSpec describes the bench_items table.
var BenchItemsSpec = register("bench_items", 1, false, BenchItemRow{})

// Validate implements Row.
func (r BenchItemRow) Validate() error {
	c := checks{table: "bench_items"}
	c.required("bench", r.Bench)
	c.required("item_id", r.ItemID)
	c.required("question", r.Question)
	enum(&c, "kind", r.Kind, BenchKindValues())
	for col, v := range map[string]string{"bench": r.Bench, "item_id": r.ItemID, "question": r.Question, "answer": r.Answer,
		"options": r.Options, "tests": r.Tests, "functions": r.Functions, "meta": r.Meta, "source": r.Source} {
		c.utf8(col, v)
	}
	switch r.Kind {
	case BenchMath, BenchChoice:
		c.required("answer", r.Answer)
	case BenchCode:
		c.required("tests", r.Tests)
	case BenchFunctionCall:
		c.required("answer", r.Answer)
		c.required("functions", r.Functions)
	case BenchExternal:
		c.fail("kind", "external benchmarks have no items (their results are imported by `spade eval import`)")
	}
	if r.Kind == BenchChoice {
		c.required("options", r.Options)
	}
	return c.err
}
