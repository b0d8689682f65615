// Package bench holds the downstream benchmarks the trained Agent is scored on (SPADE §4, Tables 1-3):
// importing a benchmark's public release into the lake's bench_items table (Import), the prompt each kind
// of item is asked with (Prompt), and the scorers that turn a response into a score in [0, 1] (Scorer).
//
// Kinds and their column mappings (docs/evaluation.md, "Benchmark kinds", has the same table for users):
//
//	math           id | problem_id | unique_id;  problem | question;  answer            (AIME exports)
//	choice         id | "Record ID";  question | "Question";  options (list) + answer (letter or text),
//	               or "Correct Answer" + "Incorrect Answer 1..3"                        (GPQA-Diamond)
//	code           question_id | id;  question_content | question;  public_test_cases, private_test_cases
//	               (JSON text or list; LiveCodeBench's base64/zlib/pickle text too); starter_code;
//	               metadata.func_name                                                   (LiveCodeBench)
//	function_call  id;  question (text or BFCL's [[{role, content}]]);  function (list of schemas);
//	               ground_truth (inline, or rows of a possible_answer file in the same import)   (BFCL)
//	env_pool       from the lake (ImportEnvPool): a pool's id | a run's env_id at a step;  code → question;
//	               setting, class_name, skill, code_sha256 → meta; hints never read. Played by the Agent
//	               in the sandbox by stages/eval (internal/play) and scored by the episode's outcome.
//
// Scoring is pure Go except where a program must run: code items run in the sandbox (CodeRunner), and
// math answers that plain normalisation cannot decide are compared by sympy in the sandbox (SympyJudge).
package bench
