// Package pool is fixed-environment GRPO (the authors' baseline, cmd/games/train_fixed_*.sh): a static
// pool of env programs imported once (`spade pool import`, Import) and, in a run with sample.pool set, the
// `pool` stage, which at each refresh step takes sample.envs_per_step of the pool's programs as the step's
// envs. Nothing is generated: sample, generate and gate are not due in such a run, and grpo trains no
// Designer (there is no generating call to train on).
//
// An RLVE pool (`spade pool import --format rlve`) also keeps each environment's difficulty window in
// `rlve_levels`: at each pool step the stage folds the previous pool's plays into it by RLVE's rule
// (Rule.Observe) and draws each env's level and shared problem seed from it.
//
// Reads: run.json (seed, setting, sample.pool, sample.envs_per_step, sample.skills, sample.rlve_*), the
// imported pool; for an RLVE pool, the previous pool step's `rlve_levels` and the `episodes` of that
// pool's steps.
// Writes: `rlve_levels` (RLVE pools only) and `envs` at the refresh step (attempt 1, no document, no
// call), in one commit.
//
// The draws are functions of the run seed, the pool index and the committed plays, so a re-run writes
// the same rows.
package pool
