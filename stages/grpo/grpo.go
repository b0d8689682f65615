package grpo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Result reports what the stage did.
type Result struct {
	// OtherShardCommitted is true when another shard had committed the step's batches (and trains).
	OtherShardCommitted bool
	// AgentSamples, DesignerSamples and Batches count the step's whole batch (every shard's rows).
	AgentSamples, DesignerSamples, Batches int
	// PoolEnd is true when the step ended its pool. DesignerSamples says whether Designer samples were
	// trained (grpo.designer_step decides at which step).
	PoolEnd bool
	// PadSamples counts the inert copies in the batch (grpo.mix_roles); they are not in AgentSamples or
	// DesignerSamples. Trimmed counts the samples cut off past grpo.global_batch and AdvantageScale the
	// short batch's advantage multiplier (both only when this process assembled the batch).
	PadSamples, Trimmed int
	AdvantageScale      float64
	// Plays counts the Agent plays that were to give samples and LeftOut those of them left out of
	// training because they could not be assembled (both only when this process assembled the batch).
	Plays   int
	LeftOut LeftOut
	// Compacted counts the plays grpo.compact_filter masked out (only when this process assembled the
	// batch).
	Compacted int
	// Trained is true when this process ran the trainer; Metrics are its rows (none for `none`).
	Trained bool
	Metrics []schemas.TrainMetricsRow
}

// Stage is the grpo stage as the stage contract runs it (stage.Execute).
type Stage struct {
	// Trainer replaces the trainer built from grpo.trainer (tests, embedding); nil builds it.
	Trainer Trainer
}

// Name is "grpo".
func (Stage) Name() stage.Name { return stage.GRPO }

// Reads is the step's episodes, turns and llm_calls (rollout) and designer_rewards (regret); at a pool
// end also the pool's envs (Assemble reads them then).
func (Stage) Reads() []stage.Input {
	return []stage.Input{
		{Table: schemas.EpisodesSpec.Name, From: stage.Rollout},
		{Table: schemas.TurnsSpec.Name, From: stage.Rollout},
		{Table: schemas.LLMCallsSpec.Name, From: stage.Rollout},
		{Table: schemas.DesignerRewardsSpec.Name, From: stage.Regret},
	}
}

// Writes is grpo_batches, then train_metrics (the marker).
func (Stage) Writes() []string {
	return []string{schemas.GRPOBatchesSpec.Name, schemas.TrainMetricsSpec.Name}
}

// Due is true at every step.
func (Stage) Due(cfg *config.Config, step int64) bool { return stage.EveryStep(cfg, step) }

// Run assembles and trains the step and returns the closing line.
func (s Stage) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	res, err := Run(ctx, env, step, s.Trainer)
	switch {
	case err != nil:
		return "", err
	case res.OtherShardCommitted:
		return "batches already committed by another shard, which trains", nil
	case !res.Trained:
		return fmt.Sprintf("shard written (%s); the last shard commits and trains", env.Shard), nil
	}
	line := fmt.Sprintf("%d agent and %d designer samples in %d batches; %d train_metrics rows",
		res.AgentSamples, res.DesignerSamples, res.Batches, len(res.Metrics))
	if n := res.LeftOut.Total(); n > 0 {
		line += fmt.Sprintf("; %d of %d plays left out (%s)", n, res.Plays, res.LeftOut)
	}
	if res.Compacted > 0 {
		line += fmt.Sprintf("; %d plays that ran out masked (grpo.compact_filter)", res.Compacted)
	}
	return line, nil
}

// Run assembles step `step`'s grpo_batches (env's shard of the envs; every shard computes the whole
// step, so batch numbers agree), commits them, and in the process that committed the partition runs
// trainer (nil: the one grpo.trainer names) and commits train_metrics. Writes that have started complete
// even if ctx is cancelled; the trainer is stopped by a cancelled ctx and then nothing is committed for it.
func Run(ctx context.Context, env *stage.Env, step int64, trainer Trainer) (Result, error) {
	log, cfg, lk, run := env.Logger(), env.Config, env.Lake, env.Run
	metricsKey := partition(run, schemas.TrainMetricsSpec.Name, step)
	batchesKey := partition(run, schemas.GRPOBatchesSpec.Name, step)
	var res Result
	var rows []schemas.GRPOBatchRow
	committed, err := lk.Committed(ctx, batchesKey)
	if err != nil {
		return res, err
	}
	if committed && !env.Force {
		if env.Shard.Sharded() {
			// The shard that committed the batches trains; an unsharded re-run retrains after a crash.
			log.Info("grpo: batches already committed by another shard", "step", step)
			return Result{OtherShardCommitted: true}, nil
		}
		if rows, err = lake.ReadRows[schemas.GRPOBatchRow](ctx, lk, batchesKey); err != nil {
			return res, fmt.Errorf("grpo: %w", err)
		}
	} else {
		asm, err := Assemble(ctx, lk, run, cfg, step)
		if err != nil {
			return res, err
		}
		if err := ctx.Err(); err != nil {
			return res, err
		}
		agent, designer := asm.Agent, asm.Designer
		res.PoolEnd, res.LeftOut, res.Plays, res.Compacted = asm.PoolEnd, asm.LeftOut, asm.Plays, asm.Compacted
		if n := asm.LeftOut.Total(); n > 0 {
			log.Warn("grpo: plays left out of training", "step", step, "left_out", n, "plays", asm.Plays,
				"causes", asm.LeftOut.String(), "first", asm.LeftOut.First)
		}
		var all []schemas.GRPOBatchRow
		if cfg.GRPO.MixRoles {
			mixed := MixBatch(agent, designer, MixOptions{GlobalBatch: cfg.GRPO.GlobalBatch, Seed: cfg.Seed, Step: step,
				ScaleShort: cfg.GRPO.KLBeta == 0, Fill: cfg.GRPO.BatchFill, Cut: cfg.GRPO.BatchCut})
			all, res.Trimmed, res.AdvantageScale = mixed.Rows, mixed.Trimmed, mixed.AdvantageScale
			if mixed.Trimmed > 0 || mixed.Padded > 0 || mixed.Duplicated > 0 {
				log.Info("grpo: one mixed global batch", "step", step, "real", mixed.Real, "trimmed", mixed.Trimmed,
					"duplicated", mixed.Duplicated, "padded", mixed.Padded, "advantage_scale", mixed.AdvantageScale)
			}
		} else {
			all = AssignBatches(agent, designer, cfg.GRPO.GlobalBatch, cfg.Seed, step)
		}
		var owned []schemas.GRPOBatchRow
		for _, r := range all {
			if env.Shard.Owns(r.EnvID) {
				owned = append(owned, r)
			}
		}
		wres, err := lake.WriteRows(context.WithoutCancel(ctx), env.Txn, batchesKey, owned,
			lake.WriteOptions{Shard: env.Shard.Index, Shards: env.Shard.Shards()})
		if err != nil {
			return res, fmt.Errorf("grpo: write %s: %w", batchesKey, err)
		}
		if !wres.Committed {
			log.Info("grpo: shard written; the last shard commits and trains", "step", step, "shard", env.Shard.String(), "rows", len(owned))
			countRows(&res, all)
			return res, nil
		}
		rows = all
	}
	countRows(&res, rows)
	if trainer == nil {
		if trainer, err = stageTrainer(env); err != nil {
			return res, err
		}
	}
	colocated := cfg.GRPO.Trainer == config.TrainerTorch && cfg.GRPO.Placement == config.PlacementColocated
	if len(rows) > 0 && colocated {
		if res.Metrics, err = trainColocated(ctx, env, trainer, step, rows); err != nil {
			return res, err
		}
	} else if len(rows) > 0 {
		if res.Metrics, err = trainer.Train(ctx, step, rows); err != nil {
			return res, err
		}
	} else {
		log.Warn("grpo: the step has no samples; nothing to train", "step", step)
	}
	res.Trained = true
	stampLeftOut(res.Metrics, res.LeftOut)
	if _, err := lake.WriteRows(context.WithoutCancel(ctx), env.Txn, metricsKey, res.Metrics, lake.WriteOptions{}); err != nil {
		return res, fmt.Errorf("grpo: write %s: %w", metricsKey, err)
	}
	log.Info("grpo: committed", "run", run, "step", step, "agent_samples", res.AgentSamples,
		"designer_samples", res.DesignerSamples, "batches", res.Batches, "trainer", cfg.GRPO.Trainer)
	return res, nil
}

// stageTrainer is the trainer grpo.trainer names for env. A resident one (grpo.trainer_mode resident) is
// kept by env across the steps of the process and closed with it (its last full checkpoint); it re-trains
// the steps after its last checkpoint from env's committed grpo_batches.
func stageTrainer(env *stage.Env) (Trainer, error) {
	cfg, lk, run := env.Config, env.Lake, env.Run
	opts := TrainerOptions{Config: cfg, Run: run, WorkDir: env.TrainerDir, Log: env.TrainerLog,
		Batches: func(ctx context.Context, step int64) ([]schemas.GRPOBatchRow, error) {
			key := partition(run, schemas.GRPOBatchesSpec.Name, step)
			committed, err := lk.Committed(ctx, key)
			if err != nil || !committed {
				return nil, err
			}
			return lake.ReadRows[schemas.GRPOBatchRow](ctx, lk, key)
		}}
	if cfg.GRPO.Trainer != config.TrainerTorch || cfg.GRPO.TrainerMode != config.TrainerResident {
		return NewTrainer(opts)
	}
	kept, err := env.Keep("grpo.trainer", func() (io.Closer, error) {
		t, err := NewTrainer(opts)
		if err != nil {
			return nil, err
		}
		return t.(io.Closer), nil
	})
	if err != nil {
		return nil, err
	}
	return kept.(Trainer), nil
}

// stampLeftOut records the step's left-out plays on its agent train_metrics rows.
func stampLeftOut(rows []schemas.TrainMetricsRow, l LeftOut) {
	for i := range rows {
		if rows[i].Role == schemas.RoleAgent {
			rows[i].LeftOutBrokenPrefix = int64(l.BrokenPrefix)
			rows[i].LeftOutMissingTokens = int64(l.MissingTokens)
			rows[i].LeftOutMissingCall = int64(l.MissingCall)
		}
	}
}

func countRows(res *Result, rows []schemas.GRPOBatchRow) {
	batches := map[int32]bool{}
	for _, r := range rows {
		batches[r.Batch] = true
		if r.Pad {
			res.PadSamples++
		} else if r.Role == schemas.RoleDesigner {
			res.DesignerSamples++
		} else {
			res.AgentSamples++
		}
	}
	res.Batches = len(batches)
}

// Batch is a step's assembled samples.
type Batch struct {
	// Agent and Designer are the roles' samples; Designer is empty but at the steps that train a pool's
	// Designer samples (config.DesignerWindows).
	Agent, Designer []schemas.GRPOBatchRow
	// PoolEnd reports whether the step ended its pool.
	PoolEnd bool
	// DesignerPools are the refresh steps of the pools whose Designer samples the step trains.
	DesignerPools []int64
	// Plays, LeftOut and Compacted are AssembleAgent's: the plays that were to give samples, those left
	// out and those masked by grpo.compact_filter.
	Plays     int
	LeftOut   LeftOut
	Compacted int
}

// Assemble reads the step's inputs and returns its agent samples and, at the steps grpo.designer_step
// names (config.DesignerWindows), the Designer samples of the pools due, with the final rewards of their
// windows. Agent plays that cannot be assembled are left out and counted (AssembleAgent); when more than
// grpo.max_left_out_share of the plays are, the error names the causes, the first play's error (which it
// wraps) and the setting.
//
// Two ablations leave the Designer's samples out. ablation.frozen_designer: the Designer is served by the
// base model (internal/llm SettingsFromConfig), so its calls carry no tokens to train on. And
// ablation.no_designer_grad (the authors' "no Designer training"): the Designer keeps calling the newest
// shared weights, which move with the Agent's updates, but none of its samples reaches grpo_batches. Its
// rows are dropped rather than kept with advantage 0 because a zero-advantage row is not gradient-free: the
// KL term (grpo.kl_beta > 0) still pulls on its tokens, it takes a slot of the global batch from an Agent
// sample and it counts in the sequence-mean divisor; the authors likewise clear the Designer's samples
// from the batch. The regret stage still writes its rewards, for the analyses.
func Assemble(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, step int64) (Batch, error) {
	var b Batch
	episodes, err := readStep[schemas.EpisodeRow](ctx, lk, run, schemas.EpisodesSpec.Name, step, stage.Rollout)
	if err != nil {
		return b, err
	}
	turns, err := readStep[schemas.TurnRow](ctx, lk, run, schemas.TurnsSpec.Name, step, stage.Rollout)
	if err != nil {
		return b, err
	}
	calls, err := readStepCalls(ctx, lk, run, step, stage.Rollout)
	if err != nil {
		return b, err
	}
	agent, err := AssembleAgent(AgentInput{Episodes: episodes, Turns: turns, Calls: calls, IncludeHinted: cfg.GRPO.IncludeHinted,
		Unit: cfg.GRPO.SampleUnit, Std: cfg.GRPO.AdvStd, Failed: cfg.GRPO.FailedPlay, Compact: cfg.GRPO.CompactFilter})
	if err != nil {
		return b, err
	}
	if agent.ExceedsShare(cfg.GRPO.MaxLeftOutShare) {
		return b, leftOutError(step, agent, cfg.GRPO.MaxLeftOutShare)
	}
	b.Agent, b.Plays, b.LeftOut, b.Compacted = agent.Samples, agent.Plays, agent.LeftOut, agent.Compacted
	b.PoolEnd = cfg.PoolEnd(step)
	windows := cfg.DesignerWindows(step)
	if len(windows) == 0 {
		return b, nil
	}
	if cfg.Ablation.FrozenDesigner || cfg.Ablation.NoDesignerGrad || cfg.Sample.Pool != "" { // a static pool has no Designer call to train on
		return b, nil
	}
	if _, err := schemas.ParseVariant(string(cfg.Regret.Variant)); err != nil {
		return Batch{}, fmt.Errorf("grpo: config key regret.variant: %w", err)
	}
	in := DesignerInput{Variant: cfg.Regret.Variant, TISCap: cfg.GRPO.TISCap}
	for _, end := range windows {
		if err := readDesignerWindow(ctx, lk, run, cfg, step, end, calls, &in); err != nil {
			return Batch{}, err
		}
	}
	if in.Scale, err = DesignerAdvScale(cfg, episodes, in.Envs); err != nil {
		return Batch{}, err
	}
	if b.Designer, err = DesignerSamples(in); err != nil {
		return Batch{}, err
	}
	b.DesignerPools = make([]int64, len(windows))
	for i, end := range windows {
		b.DesignerPools[i] = cfg.PoolStep(end)
	}
	return b, nil
}

// readDesignerWindow adds to in what the Designer samples of the pool whose window ends at end need: the
// final designer_rewards written at end, the pool's envs and the Designer calls of its refresh step
// (stepCalls when that is the step being trained).
func readDesignerWindow(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, step, end int64, stepCalls []schemas.LLMCallRow, in *DesignerInput) error {
	poolStep := cfg.PoolStep(end)
	rewards, err := readStep[schemas.DesignerRewardRow](ctx, lk, run, schemas.DesignerRewardsSpec.Name, end, stage.Regret)
	if err != nil {
		return err
	}
	envs, err := readStep[schemas.EnvRow](ctx, lk, run, schemas.EnvsSpec.Name, poolStep, stage.Gate)
	if err != nil {
		return err
	}
	calls := stepCalls
	if poolStep != step {
		if calls, err = readStepCalls(ctx, lk, run, poolStep, stage.Generate); err != nil {
			return err
		}
	}
	in.Rewards = append(in.Rewards, rewards...)
	in.Envs = append(in.Envs, envs...)
	in.Calls = append(in.Calls, calls...)
	return nil
}

// leftOutError is the stage's error when more than share of a step's plays were left out.
func leftOutError(step int64, a AgentAssembly, share float64) error {
	n := a.LeftOut.Total()
	return fmt.Errorf("grpo: step %d: %d of %d Agent plays (%.1f%%) could not be assembled (%s), more than grpo.max_left_out_share = %g allows; "+
		"fix the cause below, or raise grpo.max_left_out_share to train on the rest. First: %w",
		step, n, a.Plays, 100*float64(n)/float64(a.Plays), a.LeftOut, share, a.LeftOut.First)
}

func partition(run, table string, step int64) lake.PartitionKey {
	return lake.PartitionKey{Run: run, Table: table, Step: step}
}

// readStep reads one committed partition; a missing one names the stage to run first.
func readStep[T any](ctx context.Context, lk *lake.Lake, run, table string, step int64, producer stage.Name) ([]T, error) {
	rows, err := lake.ReadRows[T](ctx, lk, partition(run, table, step))
	if errors.Is(err, lake.ErrNotCommitted) {
		return nil, fmt.Errorf("grpo: %s of step %d is not committed (run `%s` first): %w", table, step, stage.Command(lk, run, string(producer), "--step", strconv.FormatInt(step, 10)), err)
	}
	if err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}
	return rows, nil
}

// readStepCalls reads every llm_calls row of a step for assembly (readCalls): the plain partition and
// every fragment (generate's, the gate's, each rollout shard's); a step with none names the stage to run
// first.
func readStepCalls(ctx context.Context, lk *lake.Lake, run string, step int64, producer stage.Name) ([]schemas.LLMCallRow, error) {
	parts, err := lk.StepPartitions(ctx, run, schemas.LLMCallsSpec.Name, step)
	if err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("grpo: llm_calls of step %d is not committed (run `%s` first): %w", step, stage.Command(lk, run, string(producer), "--step", strconv.FormatInt(step, 10)), lake.ErrNotCommitted)
	}
	var rows []schemas.LLMCallRow
	for _, p := range parts {
		part, err := readCalls(ctx, lk, p.Key)
		if err != nil {
			return nil, fmt.Errorf("grpo: %w", err)
		}
		rows = append(rows, part...)
	}
	return rows, nil
}
