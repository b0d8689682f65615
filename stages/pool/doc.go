// Package pool is fixed-environment GRPO (the authors' baseline, cmd/games/train_fixed_*.sh): a static
// pool of env programs imported once (`spade pool import`, Import) and, in a run with sample.pool set, the
// `pool` stage, which at each refresh step takes sample.envs_per_step of the pool's programs as the step's
// envs. Nothing is generated: sample, generate and gate are not due in such a run, and grpo trains no
// Designer (there is no generating call to train on).
//
// Reads: run.json (seed, setting, sample.pool, sample.envs_per_step, sample.skills), the imported pool.
// Writes: `envs` at the refresh step (attempt 1, no document, no call).
//
// The draw is a function of the run seed and the pool index, so a re-run writes the same rows.
package pool
