package regret

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Result reports what the stage did.
type Result struct {
	// Envs counts the envs scored at the step; Excluded those that got no reward.
	Envs, Excluded int
	// PoolEnd is true when the step ended its pool (final rewards and a memory snapshot were written).
	PoolEnd bool
	// Memory is the size of the memory snapshot written (at the step memory.written_at names).
	Memory int
	// MemoryWritten is true when the step wrote a memory snapshot.
	MemoryWritten bool
}

// Stage is the regret stage as the stage contract runs it (stage.Execute).
type Stage struct{}

// Name is "regret".
func (Stage) Name() stage.Name { return stage.Regret }

// Reads is the step's episodes.
func (Stage) Reads() []stage.Input {
	return []stage.Input{{Table: schemas.EpisodesSpec.Name, From: stage.Rollout}}
}

// Writes is ema_state, memory (at a pool end), then designer_rewards (the marker).
func (Stage) Writes() []string {
	return []string{schemas.EMAStateSpec.Name, schemas.MemorySpec.Name, schemas.DesignerRewardsSpec.Name}
}

// Due is true at every step.
func (Stage) Due(cfg *config.Config, step int64) bool { return stage.EveryStep(cfg, step) }

// Run scores the step and returns the closing line.
func (Stage) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	res, err := Run(ctx, env, step)
	if err != nil {
		return "", err
	}
	line := fmt.Sprintf("%d envs scored (%d excluded)", res.Envs, res.Excluded)
	if res.PoolEnd {
		line += ", pool end: final rewards"
	}
	if res.MemoryWritten {
		line += fmt.Sprintf(", memory %d entries", res.Memory)
	}
	return line, nil
}

// Run scores step `step` and commits ema_state, memory (at a pool end) and designer_rewards (env's
// shard of the envs; the first shard writes the per-skill state and the memory snapshot). A write
// already started completes even if ctx is cancelled meanwhile, so an interrupt leaves either a
// committed partition or none.
func Run(ctx context.Context, env *stage.Env, step int64) (Result, error) {
	log, cfg, lk, run := env.Logger(), env.Config, env.Lake, env.Run
	params, err := ParamsFrom(cfg)
	if err != nil {
		return Result{}, fmt.Errorf("regret: %w", err)
	}
	doneKey := key(run, schemas.DesignerRewardsSpec.Name, step)
	out, err := Compute(ctx, lk, run, cfg, params, step)
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	res := Result{Envs: len(out.StepScores), PoolEnd: out.PoolEnd, Memory: len(out.Memory), MemoryWritten: out.MemoryDue}
	for _, s := range out.StepScores {
		if !s.Rewarded() {
			res.Excluded++
		}
	}
	// Writes run to completion once started; designer_rewards is the stage's marker.
	wctx := context.WithoutCancel(ctx)
	wopts := lake.WriteOptions{Shard: env.Shard.Index, Shards: env.Shard.Shards()}
	global := func(rows []schemas.EMAStateRow) []schemas.EMAStateRow {
		if env.Shard.First() {
			return rows
		}
		return nil
	}
	if err := write(wctx, env.Txn, key(run, schemas.EMAStateSpec.Name, step), global(out.EMA), wopts); err != nil {
		return res, err
	}
	if out.MemoryDue {
		memory := out.Memory
		if !env.Shard.First() {
			memory = nil
		}
		if err := write(wctx, env.Txn, key(run, schemas.MemorySpec.Name, step), memory, wopts); err != nil {
			return res, err
		}
	}
	var owned []schemas.DesignerRewardRow
	for _, r := range out.Rewards {
		if env.Shard.Owns(r.EnvID) {
			owned = append(owned, r)
		}
	}
	if err := write(wctx, env.Txn, doneKey, owned, wopts); err != nil {
		return res, err
	}
	log.Info("regret: committed", "run", run, "step", step, "envs", res.Envs, "excluded", res.Excluded,
		"pool_end", res.PoolEnd, "memory", res.Memory, "shard", env.Shard.String())
	return res, nil
}

// Output is everything the stage computes for one step, before it is written.
type Output struct {
	// StepScores scores the envs on the step's episodes; FinalScores on the pool's window (pool end only).
	StepScores, FinalScores []EnvScore
	// EMA is the per-skill state after the step.
	EMA []schemas.EMAStateRow
	// Rewards holds the designer_rewards rows: per-step rows, then final rows at a pool end.
	Rewards []schemas.DesignerRewardRow
	// PoolEnd is true where the pool's window is scored (config.WindowEnd: its last step, or
	// grpo.final_step inside it).
	PoolEnd bool
	// MemoryDue is true at the step memory.written_at names: the pool's first step (pool_start) or where
	// its window is scored (pool_end); Memory is then the new snapshot.
	MemoryDue bool
	Memory    []schemas.MemoryRow
}

// Compute reads the step's inputs from the lake and computes every output, without writing.
func Compute(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, p Params, step int64) (*Output, error) {
	episodes, err := lake.ReadRows[schemas.EpisodeRow](ctx, lk, key(run, schemas.EpisodesSpec.Name, step))
	if errors.Is(err, lake.ErrNotCommitted) {
		return nil, fmt.Errorf("regret: episodes of step %d are not committed (run `%s` first): %w", step, stage.Command(lk, run, "rollout", "--step", strconv.FormatInt(step, 10)), err)
	}
	if err != nil {
		return nil, fmt.Errorf("regret: %w", err)
	}
	previousEMA, err := newestBefore[schemas.EMAStateRow](ctx, lk, run, schemas.EMAStateSpec.Name, step, 1)
	if err != nil {
		return nil, err
	}
	out := &Output{StepScores: ScoreEpisodes(episodes, p)}
	poolStep := cfg.PoolStep(step)
	out.PoolEnd = cfg.WindowEnd(step)
	if out.PoolEnd {
		window := episodes
		for s := poolStep; s < step; s++ {
			rows, err := lake.ReadRows[schemas.EpisodeRow](ctx, lk, key(run, schemas.EpisodesSpec.Name, s))
			if errors.Is(err, lake.ErrNotCommitted) {
				return nil, fmt.Errorf("regret: pool %d ends at step %d but episodes of step %d are not committed (run the pool's steps in order): %w", poolStep, step, s, err)
			}
			if err != nil {
				return nil, fmt.Errorf("regret: %w", err)
			}
			window = append(window, rows...)
		}
		out.FinalScores = ScoreEpisodes(window, p)
	}
	// The per-skill baselines move on the step's means (regret.ema_update = step) or once per pool, at its
	// end, on the window's means (pool; between pool ends the state is carried forward unchanged).
	var slow map[string]float64
	switch {
	case !p.perPool():
		out.EMA = FoldEMA(previousEMA, out.StepScores, step, p)
		slow = SlowBaselines(out.EMA)
	case out.PoolEnd:
		out.EMA = FoldEMA(previousEMA, out.FinalScores, step, p)
		slow = SlowBaselines(out.EMA)
	default:
		out.EMA = FoldEMA(previousEMA, nil, step, p)
		slow = BaselinesOrFirst(out.EMA, out.StepScores)
	}
	out.Rewards = rewardRows(out.StepScores, p, slow, step, false)
	if out.PoolEnd {
		out.Rewards = append(out.Rewards, rewardRows(out.FinalScores, p, slow, step, true)...)
	}
	var entries func(envs []schemas.EnvRow) []schemas.MemoryRow
	switch {
	case cfg.Memory.WrittenAt == config.MemoryAtPoolStart && cfg.IsRefresh(step):
		// The pool's first step: its unhinted plays give the win rate, its hinted ones the regret.
		entries = func(envs []schemas.EnvRow) []schemas.MemoryRow {
			return memoryEntries(envs, withWinRates(out.StepScores, episodes, p.Outcome), p)
		}
	case cfg.Memory.WrittenAt != config.MemoryAtPoolStart && out.PoolEnd:
		entries = func(envs []schemas.EnvRow) []schemas.MemoryRow { return memoryEntries(envs, out.FinalScores, p) }
	default:
		return out, nil
	}
	envs, err := lake.ReadRows[schemas.EnvRow](ctx, lk, key(run, schemas.EnvsSpec.Name, poolStep))
	if errors.Is(err, lake.ErrNotCommitted) {
		return nil, fmt.Errorf("regret: envs of pool %d are not committed (run `%s` first): %w", poolStep, stage.Command(lk, run, "gate", "--step", strconv.FormatInt(poolStep, 10)), err)
	}
	if err != nil {
		return nil, fmt.Errorf("regret: %w", err)
	}
	memory, err := newestBefore[schemas.MemoryRow](ctx, lk, run, schemas.MemorySpec.Name, step, int64(cfg.Sample.RefreshEvery))
	if err != nil {
		return nil, err
	}
	sort.Slice(memory, func(i, j int) bool { return memory[i].Position < memory[j].Position })
	out.MemoryDue = true
	out.Memory = PushFIFO(memory, entries(envs), cfg.Memory.Capacity, step)
	return out, nil
}

// withWinRates returns a copy of scores whose SolveRate is each env's win rate on episodes (WinRate), the
// share the authors' memory records.
func withWinRates(scores []EnvScore, episodes []schemas.EpisodeRow, rules outcome.Rules) []EnvScore {
	byEnv := map[string][]schemas.EpisodeRow{}
	for _, e := range episodes {
		byEnv[e.EnvID] = append(byEnv[e.EnvID], e)
	}
	out := append([]EnvScore(nil), scores...)
	for i := range out {
		out[i].SolveRate = WinRate(byEnv[out[i].EnvID], rules)
	}
	return out
}

// memoryEntries returns the pool's scored envs as memory entries, in slot order (then env_id).
func memoryEntries(envs []schemas.EnvRow, scores []EnvScore, p Params) []schemas.MemoryRow {
	byID := map[string]EnvScore{}
	for _, s := range scores {
		byID[s.EnvID] = s
	}
	sorted := append([]schemas.EnvRow(nil), envs...)
	sort.Slice(sorted, func(i, j int) bool {
		if sorted[i].Slot != sorted[j].Slot {
			return sorted[i].Slot < sorted[j].Slot
		}
		return sorted[i].EnvID < sorted[j].EnvID
	})
	var entries []schemas.MemoryRow
	for _, e := range sorted {
		s, played := byID[e.EnvID]
		if !played || !s.Scored() {
			continue // never played, or only env errors: nothing to remember it by
		}
		entries = append(entries, schemas.MemoryRow{PoolStep: e.PoolStep, EnvID: e.EnvID, Skill: e.Skill,
			Regret: s.Regret, SolveRate: s.SolveRate, Label: MemoryLabel(s, p.LearnLo, p.LearnHi), Code: e.Code, Hint: e.Hint})
	}
	return entries
}

// rewardRows returns one designer_rewards row per env and written variant (schemas.WrittenVariants of the
// deployed one), envs in order, variants in canonical order. A regret_anchor row whose blend is negative is marked ExcludedNegativeBlend (never, with the
// weights the config accepts; see DesignerReward). A timed-out env's rows (EnvScore.TimedOut) carry the
// penalty and no exclusion, so GRPO trains on them.
func rewardRows(scores []EnvScore, p Params, slow map[string]float64, step int64, final bool) []schemas.DesignerRewardRow {
	order := schemas.WrittenVariants(p.Deployed)
	rewards := map[schemas.Variant][]float64{}
	for _, v := range order {
		rewards[v] = Rewards(v, scores, p, slow)
	}
	rows := make([]schemas.DesignerRewardRow, 0, len(scores)*len(order))
	for i, s := range scores {
		for _, v := range order {
			excluded := s.Excluded
			switch {
			case s.TimedOut:
				excluded = ""
			case v == schemas.VariantRegretAnchor && s.Scored() && NegativeBlend(rewards[v][i]):
				excluded = ExcludedNegativeBlend
			}
			rows = append(rows, schemas.DesignerRewardRow{Step: step, PoolStep: s.PoolStep, EnvID: s.EnvID, Skill: s.Skill,
				Variant: v, Final: final, NNoHint: int32(s.NNoHint), NHint: int32(s.NHint), SolveRate: s.SolveRate,
				RNoHint: s.RNoHint, RHint: s.RHint, Regret: s.Regret, Anchor: s.Anchor, Reward: rewards[v][i], Excluded: excluded})
		}
	}
	return rows
}

func key(run, table string, step int64) lake.PartitionKey {
	return lake.PartitionKey{Run: run, Table: table, Step: step}
}

// newestBefore reads the newest committed partition of table with a step below step (nil if none). It
// first probes the `probe` steps just below step (where the previous partition normally is) and lists
// the table only when none of them is committed, so a long run does not read every manifest per step.
func newestBefore[T any](ctx context.Context, lk *lake.Lake, run, table string, step, probe int64) ([]T, error) {
	newest := int64(-1)
	for s := step - 1; s >= 0 && s >= step-probe; s-- {
		done, err := lk.Committed(ctx, key(run, table, s))
		if err != nil {
			return nil, fmt.Errorf("regret: %s: %w", table, err)
		}
		if done {
			newest = s
			break
		}
	}
	if newest < 0 && step-probe > 0 {
		steps, err := lk.Steps(ctx, run, table)
		if err != nil {
			return nil, fmt.Errorf("regret: list %s: %w", table, err)
		}
		for _, s := range steps {
			if s < step && s > newest {
				newest = s
			}
		}
	}
	if newest < 0 {
		return nil, nil
	}
	rows, err := lake.ReadRows[T](ctx, lk, key(run, table, newest))
	if err != nil {
		return nil, fmt.Errorf("regret: %w", err)
	}
	return rows, nil
}

// write writes one partition (or this shard of it) in the stage's transaction.
func write[T schemas.Row](ctx context.Context, tx *lake.Txn, k lake.PartitionKey, rows []T, opts lake.WriteOptions) error {
	if _, err := lake.WriteRows(ctx, tx, k, rows, opts); err != nil {
		return fmt.Errorf("regret: write %s: %w", k, err)
	}
	return nil
}
