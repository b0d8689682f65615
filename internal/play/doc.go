// Package play is how the Agent plays one episode of an env program in the sandbox, shared by the
// rollout stage (stages/rollout, the training episodes) and the eval stage's env_pool benchmarks
// (stages/eval): the Agent templates (prompts/, LoadAgentTemplate, Opening), action parsing
// (ParseAction, ParseToolTurn), the context budget (CutHistory, AnswerBudget, PromptCount), the return
// (EpisodeReturn) and the episode loop itself (Episode). Stages may not import each other, so the loop
// lives here; rollout re-exports its names for its callers.
package play
