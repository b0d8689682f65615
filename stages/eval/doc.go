// Package eval is the evaluation stage: it asks the Agent (the weights a step calls, or --weights) every
// item of one or more imported benchmarks, K samples each, scores each sample with the benchmark kind's
// scorer (internal/bench) and commits one eval_results row per item and sample (SPADE §4, the downstream
// scores of Tables 1-3 and Figure 12).
//
// Reads: bench_items (of each benchmark, outside the run). Writes, per benchmark and chunk of
// config eval.chunk_items items (by item id), the fragment eval-<bench>-cNNNNNN (schemas.EvalFragment)
// of llm_calls (the Agent calls, for replay) and then of eval_results. A committed chunk is never redone
// unless forced, so a killed evaluation resumes where it stopped; chunk c belongs to shard c mod n, so
// shards write the same rows as one process.
//
// An env_pool item (envpool.go) is not asked but played: each sample is one episode of the item's env
// program in the sandbox, the Agent playing without the hint through internal/play (rollout's loop),
// scored by the episode's outcome (internal/outcome) and recorded with a compact transcript as response.
package eval
