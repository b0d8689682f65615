package run

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/gate"
	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/grpo"
	"github.com/spadekit/spade/stages/regret"
	"github.com/spadekit/spade/stages/rollout"
	"github.com/spadekit/spade/stages/sample"
)

// Deps is what the real stages need from the caller.
type Deps struct {
	// Lake and Run name the run.
	Lake *lake.Lake
	Run  string
	// Log receives every stage's progress.
	Log *slog.Logger
	// Progress, when set (a terminal), receives the rollout's progress bar.
	Progress io.Writer
	// TrainerLog receives the trainer's output; TrainerDir keeps its per-step files.
	TrainerLog io.Writer
	TrainerDir string
}

// Stages returns the real stages of a step in order, wired to each other: generate, the gate's
// regenerations and rollout call the newest trained weights (the weights_version of the newest
// train_metrics before the step) through one LLM client per weights version, shared by the stages
// (a replay client loads its recorded run once, not once per stage and step), and the gate regenerates
// failed slots through generate's Generator.
//
// The runner starts a stage only when its marker is not committed, so every stage here runs with Force:
// partitions an interrupted attempt committed before its marker (a rollout's turns before its episodes,
// the gate's results before its envs) are replaced by the re-run's, never kept beside rows they do not
// belong with.
func Stages(d Deps) []Stage {
	clients := &clientCache{deps: d, byVersion: map[string]*llm.Client{}}
	return []Stage{
		{Name: Sample, Refresh: true, Marker: schemas.SamplesSpec.Name, Run: func(ctx context.Context, step int64) error {
			_, err := sample.Run(ctx, d.Lake, d.Run, step, sample.Options{Force: true, Log: d.Log})
			return err
		}},
		{Name: Generate, Refresh: true, Marker: schemas.CandidatesSpec.Name, Run: func(ctx context.Context, step int64) error {
			weights, client, err := clients.get(ctx, step)
			if err != nil {
				return err
			}
			_, err = generate.Run(ctx, d.Lake, d.Run, step, generate.Options{Force: true, WeightsVersion: weights, Client: client, Log: d.Log})
			return err
		}},
		{Name: Gate, Refresh: true, Marker: schemas.EnvsSpec.Name, Run: func(ctx context.Context, step int64) error {
			weights, client, err := clients.get(ctx, step)
			if err != nil {
				return err
			}
			// The gate asks the Designer again for a failed slot, through generate's Generator.
			regen, err := generate.NewGenerator(ctx, d.Lake, d.Run, generate.Options{WeightsVersion: weights, Client: client, Log: d.Log})
			if err != nil {
				return err
			}
			_, err = gate.Run(ctx, d.Lake, d.Run, step, gate.Options{Force: true, Regenerator: regen, Log: d.Log})
			return err
		}},
		{Name: Rollout, Marker: schemas.EpisodesSpec.Name, Run: func(ctx context.Context, step int64) error {
			weights, client, err := clients.get(ctx, step)
			if err != nil {
				return err
			}
			_, err = rollout.Run(ctx, d.Lake, d.Run, step, rollout.Options{Force: true, WeightsVersion: weights, Client: client, Log: d.Log, Progress: d.Progress})
			return err
		}},
		{Name: Regret, Marker: schemas.DesignerRewardsSpec.Name, Run: func(ctx context.Context, step int64) error {
			_, err := regret.Run(ctx, d.Lake, d.Run, step, regret.Options{Force: true, Log: d.Log})
			return err
		}},
		{Name: GRPO, Marker: schemas.TrainMetricsSpec.Name, Run: func(ctx context.Context, step int64) error {
			_, err := grpo.Run(ctx, d.Lake, d.Run, step, grpo.Options{Force: true, Log: d.Log, TrainerLog: d.TrainerLog, WorkDir: d.TrainerDir})
			return err
		}},
	}
}

// WeightsVersion returns the name the newest trained weights before step were published under (the
// weights_version of the newest non-empty train_metrics row at a lower step), or "" for the base model.
// With grpo.publish = none the trainer only saves its weights, the server keeps serving the base model,
// and the answer is always "".
func WeightsVersion(ctx context.Context, lk *lake.Lake, run string, step int64) (string, error) {
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		return "", err
	}
	if cfg.GRPO.Publish == "none" {
		return "", nil
	}
	steps, err := lk.Steps(ctx, run, schemas.TrainMetricsSpec.Name)
	if err != nil {
		return "", fmt.Errorf("run: weights version: %w", err)
	}
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i] >= step {
			continue
		}
		rows, err := lake.ReadRows[schemas.TrainMetricsRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.TrainMetricsSpec.Name, Step: steps[i]})
		if err != nil {
			return "", fmt.Errorf("run: weights version: %w", err)
		}
		for j := len(rows) - 1; j >= 0; j-- {
			if rows[j].WeightsVersion != "" {
				return rows[j].WeightsVersion, nil
			}
		}
	}
	return "", nil
}

// clientCache builds one LLM client per weights version, on first use (a run of only regret and grpo
// never needs one). Stages run one at a time and each commits the calls it made (TakeCalls) before it
// returns, so sharing the client never mixes two stages' calls.
type clientCache struct {
	deps      Deps
	byVersion map[string]*llm.Client
}

// get returns the weights version of step and the client that calls it.
func (c *clientCache) get(ctx context.Context, step int64) (string, *llm.Client, error) {
	weights, err := WeightsVersion(ctx, c.deps.Lake, c.deps.Run, step)
	if err != nil {
		return "", nil, err
	}
	if client, ok := c.byVersion[weights]; ok {
		return weights, client, nil
	}
	cfg, err := c.deps.Lake.RunConfig(ctx, c.deps.Run)
	if err != nil {
		return "", nil, err
	}
	client, err := llm.NewFromConfig(ctx, cfg, c.deps.Lake, weights, schemas.RoleDesigner, schemas.RoleAgent)
	if err != nil {
		return "", nil, err
	}
	c.byVersion[weights] = client
	return weights, client, nil
}
