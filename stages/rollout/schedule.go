package rollout

import (
	"context"
	"fmt"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// Plays returns how many episodes each env of the pool plays at step without and with the hint, playable
// being the pool's envs that still play at step (its accepted envs less those TimedOutEnvs dropped, over
// every shard, so each shard reaches the same number from the lake):
//
//   - unhinted, rollout.plays_per_env fill_batch (the authors'): UnhintedPlays(grpo.global_batch,
//     playable) at every step; rollout.group_size when nothing is playable;
//   - unhinted, rollout.plays_per_env group_size: rollout.group_size, at every step;
//   - hinted, rollout.hinted_at pool_start (the authors' schedule): rollout.hinted_group_size at the
//     pool's first step (cfg.PoolStep(step) == step), none at its later steps;
//   - hinted, rollout.hinted_at every_step: min(rollout.hinted_group_size, rollout.group_size) at
//     every step, so each hinted play has an unhinted twin of the same index (and, with
//     rollout.paired_seeds, the same reset seed). Whenever hinted_group_size ≥ group_size (the presets:
//     16 and 8), that is group_size hinted plays, as many as unhinted ones.
//
// Episodes are numbered 0..n−1 within each (env, hinted) group (EpisodeID, EpisodeSeed).
func Plays(cfg *config.Config, step int64, playable int) (unhinted, hinted int) {
	unhinted = cfg.Rollout.GroupSize
	if cfg.Rollout.PlaysPerEnv == config.PlaysFillBatch && playable > 0 {
		unhinted = UnhintedPlays(cfg.GRPO.GlobalBatch, playable)
	}
	switch cfg.Rollout.HintedAt {
	case config.HintedAtPoolStart:
		if cfg.PoolStep(step) == step {
			hinted = cfg.Rollout.HintedGroupSize
		}
	default:
		hinted = min(cfg.Rollout.HintedGroupSize, unhinted)
	}
	return unhinted, max(hinted, 0)
}

// UnhintedPlays returns ⌈globalBatch / envs⌉, the unhinted plays per env that fill a global batch of
// globalBatch Agent samples from envs envs (8 for 192 over 24, 10 over 20, 15 over 13). envs must be ≥ 1.
func UnhintedPlays(globalBatch, envs int) int {
	return (globalBatch + envs - 1) / envs
}

// TimedOutEnvs returns the envs that are dropped for the rest of their pool at step: those with an
// episode that ended by timeout (an env that overran a sandbox deadline: sandbox.step_timeout_seconds
// for a step, the load deadline for its load, new instance or reset) at an earlier step of the same pool,
// poolStep ≤ s < step. This is the authors' rule that a game which hangs is not played again until the
// pool is replaced (orchestrator, hung-game blacklist); the episodes table is the record, so a re-run,
// a resumed run or another shard reaches the same decision. Episodes of the same step are not
// consulted: every play of a step starts together, and the sandbox kills each hung one at its deadline.
func TimedOutEnvs(ctx context.Context, lk *lake.Lake, run string, poolStep, step int64) (map[string]bool, error) {
	steps, err := lk.Steps(ctx, run, schemas.EpisodesSpec.Name)
	if err != nil {
		return nil, fmt.Errorf("rollout: earlier episodes of the pool: %w", err)
	}
	dropped := map[string]bool{}
	for _, s := range steps {
		if s < poolStep || s >= step {
			continue
		}
		episodes, err := lake.ReadRows[schemas.EpisodeRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.EpisodesSpec.Name, Step: s})
		if err != nil {
			return nil, fmt.Errorf("rollout: episodes of step %d: %w", s, err)
		}
		for _, e := range episodes {
			if e.EndedBy == schemas.EndedTimeout && e.PoolStep == poolStep {
				dropped[e.EnvID] = true
			}
		}
	}
	return dropped, nil
}
