// Package grpo is the `grpo` stage: it assembles each step's GRPO training samples for both roles and hands
// them to the trainer (SPADE §2.2; docs/architecture.md, "One training step", "Contracts", "Formulas").
//
// Agent samples, every step: one per play of the step's unhinted episodes (grpo.sample_unit = episode:
// the whole play as one token sequence, the completions trained and the tokens between them masked) or
// one per assistant turn (turn), carrying the exact prompt and completion token ids and behaviour
// log-probs that llm_calls recorded (never re-tokenized), with the episode's return standardized within
// its env's group as the advantage (grpo.adv_std), after the failed plays grpo.failed_play names are left
// out. Designer samples, at the pool's last step: one per scored env of the pool, the tokens of its
// generating call, with the env's final reward minus the mean over the pool's envs of the same skill,
// times grpo.designer_adv_scale (auto: the authors' min(50, plays per step / designs per pool ×
// refresh_every)), as the advantage and the truncated-IS cap grpo.tis_cap (the Designer's update arrives
// a whole pool late). ablation.frozen_designer and ablation.no_designer_grad leave the Designer's samples
// out.
//
// Reads: run.json (grpo.*, regret.variant, seed, sample.refresh_every, ablation.frozen_designer,
// ablation.no_designer_grad, grpo.designer_adv_scale), `episodes`, `turns` and `llm_calls` of the step;
// at a pool end also `designer_rewards` of the step, `envs` and `llm_calls` of the pool step. Writes:
// `grpo_batches` at the step (under grpo.mix_roles one global batch of grpo.global_batch samples, the
// Designer's first; otherwise batches of at most grpo.global_batch samples per role, the Agent's first),
// then runs the grpo.trainer (none: batches only; torch: spade_trainer) and commits `train_metrics` at
// the step (empty for none), whose manifest marks the stage done. trainer.go holds the Trainer interface.
package grpo
