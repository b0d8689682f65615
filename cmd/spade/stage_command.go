package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/shard"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// stageOptions are the options every stage command shares (stageFlags).
type stageOptions struct {
	globalOptions
	// Step is --step, the training step to run the stage at.
	Step int64
	// Shard is --shard of --shards: which of the step's processes this is.
	Shard shard.Spec
	// Force is --force: replace committed partitions.
	Force bool
}

// stageFlags are a stage command's flags: --step, --shard/--shards (envs split by internal/shard's hash
// of env_id; the refresh stages sample, generate and gate split slots, since a slot's env_id changes
// with each attempt), --force, then the stage's own flags.
func stageFlags(own ...cli.Flag) []cli.Flag {
	return append([]cli.Flag{
		&cli.Int64Flag{Name: "step", Required: true, Usage: "the training step"},
		&cli.IntFlag{Name: "shard", Value: 0, EnvVars: []string{"SPADE_SHARD"}, Usage: "this process's shard, 0..shards-1 (envs split by a hash of env_id; sample, generate and gate split slots: slot mod shards)"},
		&cli.IntFlag{Name: "shards", Value: 1, EnvVars: []string{"SPADE_SHARDS"}, Usage: "number of processes running this step of the stage; the partition commits when all are in"},
		&cli.BoolFlag{Name: "force", Usage: "replace committed partitions (unsharded only)"},
	}, own...)
}

// stageOptionsFrom parses stageFlags' shared flags.
func stageOptionsFrom(c *cli.Context) stageOptions {
	return stageOptions{globalOptions: globalsFrom(c), Step: c.Int64("step"), Force: c.Bool("force"),
		Shard: shard.Spec{Index: c.Int("shard"), Count: c.Int("shards")}}
}

// closeEnv closes env (the sandbox pool; a resident trainer writes its last full checkpoint) and logs a
// failure: the lake already holds every committed step, so a checkpoint that could not be written costs
// only the re-training of its steps at the next start.
func closeEnv(env *stage.Env) {
	if err := env.Close(); err != nil {
		slog.Default().Warn("closing the run's processes", "err", err)
	}
}

// runStage runs one stage at opts.Step for this process's shard: it opens the run, builds the Env once,
// lets makeStage set the stage's own fields of the Env (--weights, ...) and make the stage, runs it
// through stage.Execute and prints one closing line. A bad request (step, shard, a stage not due) is a
// usage error.
func runStage(ctx context.Context, opts stageOptions, makeStage func(env *stage.Env) (stage.Stage, error)) error {
	lk, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	env := &stage.Env{Lake: lk, Run: run, Config: cfg, Force: opts.Force, Shard: opts.Shard,
		Log: slog.Default(), Progress: opts.Progress, TrainerLog: os.Stderr}
	defer closeEnv(env)
	s, err := makeStage(env)
	if err != nil {
		return err
	}
	out, err := stage.Execute(ctx, env, s, opts.Step)
	if errors.Is(err, stage.ErrInvalid) || errors.Is(err, stage.ErrNotDue) {
		return asUsage(err)
	}
	if err != nil {
		return err
	}
	if out.Skipped {
		fmt.Fprintf(opts.Out, "%s: step %d already committed (use --force to redo it)\n", s.Name(), opts.Step)
		return nil
	}
	fmt.Fprintf(opts.Out, "%s: step %d: %s\n", s.Name(), opts.Step, out.Summary)
	return nil
}

// onlyStages is the step's stages (steprun.Stages) narrowed to --only's comma-separated names ("" keeps
// them all), for `spade run` and `spade k8s render`; an unknown name is a usage error.
func onlyStages(only string) ([]stage.Stage, error) {
	var names []string
	if only != "" {
		names = strings.Split(only, ",")
	}
	stages, err := steprun.Select(steprun.Stages(), names)
	if err != nil {
		return nil, asUsage(err)
	}
	return stages, nil
}
