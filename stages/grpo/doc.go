// Package grpo is the `grpo` stage: it assembles each step's GRPO training samples for both roles and hands
// them to the trainer (SPADE §2.2; docs/architecture.md, "One training step", "Contracts", "Formulas").
//
// Agent samples, every step: one per assistant turn of the step's episodes, carrying the exact prompt and
// completion token ids and behaviour log-probs that llm_calls recorded (never re-tokenized), with the
// episode's return standardized within its env's group as the advantage. Designer samples, at the pool's
// last step: one per scored env of the pool, the tokens of its generating call, with the env's final reward
// minus the mean over the pool's envs of the same skill, times grpo.designer_adv_scale (auto: the authors'
// min(50, plays per step / designs per pool × refresh_every)), as the advantage and the truncated-IS cap
// grpo.tis_cap (the Designer's update arrives a whole pool late). ablation.frozen_designer and
// ablation.no_designer_grad leave the Designer's samples out.
//
// Reads: run.json (grpo.*, regret.variant, seed, sample.refresh_every, ablation.frozen_designer, ablation.no_designer_grad, grpo.designer_adv_scale),
// `episodes`, `turns` and `llm_calls` of the step; at a pool end also `designer_rewards` of the step,
// `envs` and `llm_calls` of the pool step.
// Writes: `grpo_batches` at the step (batches of at most grpo.global_batch samples, agent batches first),
// then runs the grpo.trainer (none: batches only; torch: spade_trainer) and commits `train_metrics` at the
// step (empty for none), whose manifest marks the stage done. trainer.go holds the Trainer interface.
package grpo
