package analytics

import (
	"context"
	"fmt"
	"sort"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// RescoredEnv is one env of a pool with its reward under every variant.
type RescoredEnv struct {
	// EnvID, Skill and PoolStep identify the env.
	EnvID, Skill string
	PoolStep     int64
	// SolveRate and Regret are the env's pool-window no-hint solve rate and hint regret.
	SolveRate, Regret float64
	// Rewards maps a variant name to the env's reward; an env without a reward (excluded) is absent.
	Rewards map[string]float64
}

// PoolScorer recomputes Designer rewards; the CLI hands in regret.PoolScorer, the regret stage's
// formulas, so they live in one place. Step is called for every step in order with that step's episodes
// (for stateful variants such as ema_lp); PoolEnd after the last step of each pool, with all the pool's
// episodes.
type PoolScorer interface {
	// Variants names the variants, the deployed one first.
	Variants() []string
	// Step folds one step's episodes into the scorer's state.
	Step(step int64, episodes []schemas.EpisodeRow)
	// PoolEnd scores the pool's envs under every variant.
	PoolEnd(poolStep int64, episodes []schemas.EpisodeRow) []RescoredEnv
}

// TopPick is the env a variant ranks first in one pool.
type TopPick struct {
	// Variant and PoolStep say whose pick it is.
	Variant  string
	PoolStep int64
	// Env is the top-ranked env (highest reward; ties broken by env_id).
	Env RescoredEnv
}

// Rescore reads a run's episodes, replays them through scorer pool by pool, and returns every variant's
// top pick per pool.
func Rescore(ctx context.Context, lk *lake.Lake, run string, scorer PoolScorer) ([]TopPick, error) {
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		return nil, err
	}
	steps, err := lk.Steps(ctx, run, schemas.EpisodesSpec.Name)
	if err != nil {
		return nil, err
	}
	var picks []TopPick
	var pool []schemas.EpisodeRow
	flush := func(poolStep int64) {
		if len(pool) == 0 {
			return
		}
		envs := scorer.PoolEnd(poolStep, pool)
		for _, v := range scorer.Variants() {
			var best *RescoredEnv
			for i := range envs {
				r, ok := envs[i].Rewards[v]
				if !ok {
					continue
				}
				if best == nil || r > best.Rewards[v] || (r == best.Rewards[v] && envs[i].EnvID < best.EnvID) {
					best = &envs[i]
				}
			}
			if best != nil {
				picks = append(picks, TopPick{Variant: v, PoolStep: poolStep, Env: *best})
			}
		}
		pool = pool[:0]
	}
	current := int64(-1)
	for _, step := range steps {
		rows, err := lake.ReadRows[schemas.EpisodeRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.EpisodesSpec.Name, Step: step})
		if err != nil {
			return nil, fmt.Errorf("analytics: rescore %s: %w", run, err)
		}
		if p := cfg.PoolStep(step); p != current {
			flush(current)
			current = p
		}
		scorer.Step(step, rows)
		pool = append(pool, rows...)
	}
	flush(current)
	return picks, nil
}

// RescoreSummary compares the variants' picks: per variant, how often its top env is the deployed
// variant's, and the mean solve rate, learnable-band share and regret of its top envs.
func RescoreSummary(picks []TopPick, variants []string, bandLo, bandHi float64) *Table {
	deployed := map[int64]string{}
	for _, p := range picks {
		if p.Variant == variants[0] {
			deployed[p.PoolStep] = p.Env.EnvID
		}
	}
	t := &Table{Columns: []string{"variant", "pools", "same_top_as_" + variants[0], "top_solve_rate", "top_in_band", "top_regret"}}
	for _, v := range variants {
		var n, same, inBand int
		var solve, regret float64
		for _, p := range picks {
			if p.Variant != v {
				continue
			}
			n++
			if deployed[p.PoolStep] == p.Env.EnvID {
				same++
			}
			if p.Env.SolveRate >= bandLo && p.Env.SolveRate <= bandHi {
				inBand++
			}
			solve += p.Env.SolveRate
			regret += p.Env.Regret
		}
		if n == 0 {
			continue
		}
		t.Rows = append(t.Rows, []any{v, int64(n), float64(same) / float64(n), solve / float64(n),
			float64(inBand) / float64(n), regret / float64(n)})
	}
	return t
}

// PicksTable lists every pick: pool step, variant, env, its solve rate, regret and reward.
func PicksTable(picks []TopPick) *Table {
	sorted := append([]TopPick(nil), picks...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].PoolStep < sorted[j].PoolStep })
	t := &Table{Columns: []string{"pool_step", "variant", "env_id", "skill", "solve_rate", "regret", "reward"}}
	for _, p := range sorted {
		t.Rows = append(t.Rows, []any{p.PoolStep, p.Variant, p.Env.EnvID, p.Env.Skill, p.Env.SolveRate, p.Env.Regret,
			p.Env.Rewards[p.Variant]})
	}
	return t
}
