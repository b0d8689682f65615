package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/internal/tensorboard"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// runOptions are the options of `spade run`.
type runOptions struct {
	globalOptions
	// Steps is --steps, in steprun.StepsGrammar.
	Steps string
	// Only is --only, comma-separated stage names ("" for every stage).
	Only string
	// TrainerDir is --trainer-dir: where the trainer's per-step files are kept ("" keeps none).
	TrainerDir string
	// TensorBoard is --tensorboard: the log directory the figures are written to as steps commit ("":
	// none).
	TensorBoard string
}

func newRunCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run whole steps: each step's stages in order, resuming from the last committed partition",
		Description: "For each step of --steps: sample, generate and gate at pool refresh steps (sample.refresh_every),\n" +
			"then rollout, regret and grpo. A stage whose output partition is committed is skipped, so after a crash,\n" +
			"Ctrl-C or reboot the same command resumes where the work stopped. Ctrl-C stops the stage in progress,\n" +
			"lets a write that has started finish, commits nothing partial and exits 130. A per-stage time table is\n" +
			"printed at the end; after each step one line says what it did (accepted envs, solve rate unhinted and\n" +
			"hinted, regret, loss per role, tokens per role, time). --tensorboard DIR writes the figures of\n" +
			"`spade export tensorboard` to DIR/<run> as the steps commit (a window's once it is complete).\n\n" +
			"--steps is " + steprun.StepsGrammar + "; steps run in ascending order,\n" +
			"each once. Anything else (1..3, 3x, 1,,2) is refused with exit 2.\n\n" +
			"Example: spade --run r1 run --steps 0-7\n" +
			"         spade --run r1 run --steps 0-399 --only regret,grpo   # re-score stored episodes",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "steps", Required: true, Usage: "steps to run: A, A-B (inclusive) or a comma-separated list, e.g. 0-3,8,10-11"},
			&cli.StringFlag{Name: "only", Usage: "comma-separated stages to run (default: every stage)"},
			&cli.StringFlag{Name: "trainer-dir", Usage: "keep the trainer's per-step files under DIR"},
			&cli.StringFlag{Name: "tensorboard", Usage: "write TensorBoard event files to `DIR`/<run> as steps commit"},
		},
		Action: func(c *cli.Context) error {
			return runRun(c.Context, runOptions{globalOptions: globalsFrom(c), Steps: c.String("steps"),
				Only: c.String("only"), TrainerDir: c.String("trainer-dir"), TensorBoard: c.String("tensorboard")})
		},
	}
}

// runRun runs every step of opts.Steps, each step's due stages in order.
func runRun(ctx context.Context, opts runOptions) error {
	steps, err := steprun.ParseSteps(opts.Steps)
	if err != nil {
		return asUsage(err)
	}
	lk, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	stages := steprun.Stages()
	var only []string
	if opts.Only != "" {
		only = strings.Split(opts.Only, ",")
	}
	if stages, err = steprun.Select(stages, only); err != nil {
		return asUsage(err)
	}
	env := &stage.Env{Lake: lk, Run: run, Config: cfg, Shard: shard.All, Log: slog.Default(), Progress: opts.Progress,
		TrainerLog: os.Stderr, TrainerDir: opts.TrainerDir}
	defer env.Close()
	ro := steprun.Options{Stages: stages, Out: opts.Out, Log: slog.Default(), StepLines: opts.Out}
	if opts.TensorBoard != "" {
		live, err := tensorboard.NewLive(tensorBoardRunDir(opts.TensorBoard, run))
		if err != nil {
			return asUsage(fmt.Errorf("--tensorboard: %w", err))
		}
		defer live.Close()
		ro.AfterStep = func(ctx context.Context, s steprun.StepSummary) error {
			sess, err := openTensorBoardSession(ctx, lk, run)
			if err != nil {
				return err
			}
			defer sess.Close()
			_, err = live.Step(ctx, sess, s.Step)
			return err
		}
	}
	_, err = steprun.Run(ctx, env, steps, ro)
	return err
}
