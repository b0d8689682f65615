package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/internal/tensorboard"
	"github.com/spadekit/spade/stages/cluster"
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
	// Executor is --executor: inprocess (run the stages here) or slurm (submit them as Slurm jobs).
	Executor string
	// Shards is --shards: the array tasks of each fan-out stage under --executor slurm.
	Shards int
}

// The executors of `spade run`.
const (
	executorInProcess = "inprocess"
	executorSlurm     = "slurm"
)

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
			"--executor slurm runs nothing here: it submits each due stage of each step as Slurm jobs (gate, rollout\n" +
			"and eval as job arrays of --shards tasks, the others as single jobs) chained with afterok, with the\n" +
			"run's slurm.* resources, records the job ids in the lake, and returns. The same command again after a\n" +
			"failure submits only what is neither committed nor still pending or running; `spade status` watches.\n" +
			"Before submitting, each stage's request (slurm.<stage>.cpus, mem, gres, partition) is compared with\n" +
			"the partition's nodes as sinfo reports them: one no node could ever hold is refused with exit 2.\n\n" +
			"Example: spade --run r1 run --steps 0-7\n" +
			"         spade --run r1 run --steps 0-399 --only regret,grpo   # re-score stored episodes\n" +
			"         spade --lake s3://lake/p --run r1 run --steps 0-399 --executor slurm --shards 8",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "steps", Required: true, Usage: "steps to run: A, A-B (inclusive) or a comma-separated list, e.g. 0-3,8,10-11"},
			&cli.StringFlag{Name: "only", Usage: "comma-separated stages to run (default: every stage)"},
			&cli.StringFlag{Name: "trainer-dir", Usage: "keep the trainer's per-step files under DIR"},
			&cli.StringFlag{Name: "tensorboard", Usage: "write TensorBoard event files to `DIR`/<run> as steps commit"},
			&cli.StringFlag{Name: "executor", Value: executorInProcess, Usage: "inprocess (run the stages in this process) or slurm (submit them as Slurm jobs)"},
			&cli.IntFlag{Name: "shards", Value: 1, Usage: "with --executor slurm: array tasks of each gate, rollout and eval job"},
		},
		Action: func(c *cli.Context) error {
			return runRun(c.Context, runOptions{globalOptions: globalsFrom(c), Steps: c.String("steps"),
				Only: c.String("only"), TrainerDir: c.String("trainer-dir"), TensorBoard: c.String("tensorboard"),
				Executor: c.String("executor"), Shards: c.Int("shards")})
		},
	}
}

// runRun runs every step of opts.Steps, each step's due stages in order.
func runRun(ctx context.Context, opts runOptions) error {
	steps, err := steprun.ParseSteps(opts.Steps)
	if err != nil {
		return asUsage(err)
	}
	if err := checkChoice("--executor", opts.Executor, executorInProcess, executorSlurm); err != nil {
		return err
	}
	if opts.Shards < 1 {
		return usageError("--shards must be >= 1, got %d", opts.Shards)
	}
	if opts.Executor == executorInProcess && opts.Shards != 1 {
		return usageError("--shards splits stages between Slurm jobs: pass --executor slurm (one process runs every shard itself)")
	}
	if opts.Executor == executorSlurm && opts.TensorBoard != "" {
		return usageError("--tensorboard writes as this process commits steps; under --executor slurm the jobs commit elsewhere: run `spade export tensorboard DIR` once they have")
	}
	if opts.Executor == executorSlurm && opts.TrainerDir != "" {
		return usageError("--trainer-dir keeps files of a trainer run here; under --executor slurm the grpo jobs run elsewhere")
	}
	lk, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	stages, err := onlyStages(opts.Only)
	if err != nil {
		return err
	}
	if opts.Executor == executorSlurm {
		return submitSlurm(ctx, opts, lk, run, cfg, stages, steps)
	}
	env := &stage.Env{Lake: lk, Run: run, Config: cfg, Shard: shard.All, Log: slog.Default(), Progress: opts.Progress,
		TrainerLog: os.Stderr, TrainerDir: opts.TrainerDir}
	defer closeEnv(env)
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

// submitSlurm is `spade run --executor slurm`: the due stages of steps submitted as Slurm jobs.
func submitSlurm(ctx context.Context, opts runOptions, lk *lake.Lake, run string, cfg *config.Config, stages []stage.Stage, steps []int64) error {
	for _, prog := range []string{"sbatch", "squeue", "scancel", "sinfo"} {
		if _, err := exec.LookPath(prog); err != nil {
			return usageError("--executor slurm: no %s on PATH: submit from a machine of the Slurm cluster (a login node)", prog)
		}
	}
	uri, err := nodeLakeURI(opts.LakeURI)
	if err != nil {
		return err
	}
	command := config.SplitArgs(cfg.Slurm.Command)
	if len(command) == 0 {
		self, err := os.Executable()
		if err != nil {
			return fmt.Errorf("run: the spade binary's path (set slurm.command instead): %w", err)
		}
		command = []string{self}
	}
	logDir := cfg.Slurm.LogDir
	if logDir == "" {
		logDir = filepath.Join("spade-logs", run)
	}
	if logDir, err = filepath.Abs(logDir); err != nil {
		return err
	}
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return fmt.Errorf("run: the job log directory: %w", err)
	}
	_, err = cluster.SubmitSlurm(ctx, lk, run, cfg, stages, steps, cluster.SlurmOptions{LakeURI: uri, Shards: opts.Shards,
		Command: command, LogDir: logDir, Out: opts.Out})
	var misfit *cluster.FitError
	if errors.As(err, &misfit) {
		return usageError("--executor slurm: nothing submitted: %v", misfit)
	}
	if err == nil {
		fmt.Fprintf(opts.Out, "watch it with: spade --lake %s --run %s status\n", uri, run)
	}
	return err
}

// nodeLakeURI is the lake as another machine names it: an S3 URI as it is, a local directory as its
// absolute path (it must be on a file system the nodes share).
func nodeLakeURI(uri string) (string, error) {
	if strings.HasPrefix(uri, "s3://") {
		return uri, nil
	}
	return filepath.Abs(uri)
}
