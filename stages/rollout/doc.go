// Package rollout is the `rollout` stage: the Reasoning Agent plays every environment of the current
// pool through observations only (SPADE §2.1, §2.3), rollout.group_size episodes without the hint and as
// many with it in the system prompt. With rollout.paired_seeds both groups reset with the same seeds,
// so the hint regret r̄(e|h) − r̄(e) compares like with like (the paper's remedy for its noisy regret).
//
// An episode runs at most rollout.max_turns turns: observation → Agent (the turn history cut to
// rollout.context_tokens − llm.agent.max_tokens) → parse `<action>…</action>` (games) or the OpenAI tool
// call (tools, the env's tools() sent as tools) → env.step. An unparsable answer is a turn with a parse
// error and feedback, not a crash; an env that raises, crashes or times out ends its episode with
// ended_by env_error or timeout; a failed model call ends it with agent_error. One bad env never stops
// the stage. All episodes run concurrently, bounded by llm.max_in_flight and the sandbox workers.
//
// Reads: run.json, the newest `envs` pool at or before the step. Writes: `llm_calls` (its own "rollout"
// fragment of the step, one shard per process), then `turns`, then `episodes` at the step. Episodes mark
// the stage done: a re-run after a kill before them replaces the calls and turns the killed attempt
// committed (the whole partitions unsharded, the shard's own parts sharded), so the stage resumes by
// itself. Each episode records its env process's CPU seconds (sandbox Env.CPUSeconds).
package rollout
