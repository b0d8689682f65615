// Package rollout is the `rollout` stage: the Reasoning Agent plays every environment of the current
// pool through observations only (SPADE §2.1, §2.3). Plays gives the schedule: rollout.group_size
// episodes without the hint at every step, and hinted episodes either at the pool's first step only
// (rollout.hinted_at pool_start, rollout.hinted_group_size of them, the authors' schedule) or at every
// step beside the unhinted ones (every_step). A hinted play reads the hint in its first observation
// (rollout.hint_placement observation: a blank line and "HINT: …", as the authors do) or in the system
// prompt (system). With rollout.paired_seeds the i-th hinted and unhinted plays reset with the same seed,
// so the hint regret r̄(e|h) − r̄(e) compares like with like.
//
// An episode runs at most rollout.max_turns turns: observation → Agent → parse the answer → env.step.
// Games answers end with `<action>…</action>` (rollout.action_format tag, prompt agent_games.v1, a system
// prompt) or `\boxed{…}` (boxed, prompt agent_games.v2: no system prompt, the first user message frames
// the game, after the authors' template); tools answers are OpenAI tool calls (the env's tools() sent as
// tools). Under generate.hint_mode separate (the presets; ToolsFinalAnswer) the tools prompt is
// agent_tools.v2 (no system prompt, the first instruction framed after the authors' tools actor) and an
// answer without a tool call whose text holds <answer>…</answer> is stepped as the plain text
// "<answer>CONTENT</answer>", which ends the episode when the env accepts it; under inline hints the
// prompt is agent_tools.v1 and only tool calls are played. rollout.prompt_file replaces the embedded prompt (PromptData lists what a template gets). The
// history is cut oldest first to rollout.context_tokens − llm.agent.max_tokens (rollout.context
// drop_oldest) or kept whole, the episode ending with ended_by max_turns once it no longer fits
// (truncate, the authors'). Its return is EpisodeReturn (rollout.return: terminal or sum).
//
// Token I/O (rollout.token_io): chat (the default) sends every turn to Chat Completions with the message
// history. tokens (games only, context truncate) sends turn 0 the same way and every later turn to the
// OpenAI-compatible POST /v1/completions with a token-id prompt: the previous turn's prompt ids and
// completion ids as the server returned them, then the tokens the chat template adds for the next
// observation (or the parse feedback), as the authors' get_token_delta finds them: the template
// rendered with the new message and without it, the difference tokenized (rollout.token_io_delta:
// server, vLLM's /tokenize with messages, the two renderings' ids; template, the model's own template
// rendered here by internal/chattemplate, the text difference tokenized by the server's /tokenize; text,
// the hand-written TokenIOText(rollout.token_io_template, observation)). For Qwen3's ChatML the delta is
// "<|im_start|>user\n{observation}<|im_end|>\n<|im_start|>assistant\n" after the sampled <|im_end|>. Every
// turn's prompt then extends the previous one by construction, so GRPO's episode samples hold exactly
// what was sampled; the context check counts the real prompt length. A template that renders the earlier
// turns differently once a message is added (Qwen3-8B's hybrid one) ends the play with agent_error naming
// chat mode with per-turn samples. The tokenize calls are recorded in llm_calls (key ObservationKey, with
// "/with" and "/without" under server; the tokens as prompt_token_ids, no completion) beside the turns'
// calls, so a replayed run answers them too.
//
// Failures: an unparsable answer is a turn with a parse error and feedback, not a crash; an env that
// raises, crashes or times out ends its episode with ended_by env_error or timeout; a failed model call
// (after the client's retries) ends it with agent_error. An env with a timeout at an earlier step of its
// pool is not played again in that pool (TimedOutEnvs); a play whose sandbox worker died under it is
// played once more on a fresh worker, its first attempt's turns and calls left out. One bad env never
// stops the stage. All episodes run concurrently, bounded by llm.max_in_flight and the sandbox workers.
//
// Reads: run.json, the newest `envs` pool at or before the step, the pool's earlier `episodes`. Writes:
// `llm_calls` (its own "rollout" fragment of the step, one shard per process), `turns` and `episodes` at
// the step, in the stage's one transaction: a killed attempt commits nothing, so a re-run starts clean.
// Episodes mark the stage done. Each episode records its env process's CPU seconds (sandbox
// Env.CPUSeconds).
package rollout
