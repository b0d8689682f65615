// Package regret is the `regret` stage: it turns a step's episodes into the Designer's reward and, at the end
// of a pool, into the environment memory (SPADE §2.2 difficulty anchor, §2.3 hint regret, §2.4 memory, §3.5
// EMA learning potential; docs/architecture.md, "One training step", "Formulas").
//
// Reads: run.json (regret.*, outcome.*, memory.capacity, metrics.band_lo/hi, sample.refresh_every), `episodes` of the
// step (and of every step of the pool's window at the pool's last step), `envs` of the pool (code, hint,
// slot), the newest `ema_state` and `memory` partitions before the step.
//
// Writes, at step t of the pool that started at p (pool end = p + sample.refresh_every − 1):
//   - `ema_state` at t: the per-skill fast and slow EMA of the skills' mean no-hint return (carried
//     unchanged inside a pool under regret.ema_update = pool);
//   - `memory` at t when t is the pool end: a snapshot of the whole FIFO memory after the pool joined it;
//   - `designer_rewards` at t, last (its manifest marks the stage done): one row per env and variant
//     scored on t's episodes (final = false), plus at the pool end one row per env and variant aggregated
//     over the pool's whole window (final = true), which is what GRPO's Designer samples use.
//
// The authors' settings are keys (the presets take the authors' values; zero values give the plain
// formulas): regret.scale (the regret term clip(Δ/scale, 0, 1) instead of max(0, Δ)), regret.ramp (the
// plateau anchor), regret.delta (matched: Δ against the unhinted plays of the hinted plays' own step,
// which the final rows find at the pool's first step under rollout.hinted_at = pool_start, and the
// anchor on the window's mean unhinted outcome) and regret.ema_update (pool: the baselines move once per
// pool, at its end). formulas.go holds each equation.
//
// Which episodes count and what an env's solve rate and mean outcome are is internal/outcome's (under
// outcome.exclude_ended_by and outcome.value), the same definition the audit models of sql/ read through
// env_outcomes, so the Designer is rewarded on the numbers it is audited on.
//
// Every output is a function of committed inputs, so a re-run, a resume after a crash, or n shards
// (`--shard i --shards n`: each shard writes the designer_rewards rows of its envs; shard 0 writes the
// per-skill state and the memory) commit the same rows.
package regret
