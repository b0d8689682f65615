package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/cluster"
	steprun "github.com/spadekit/spade/stages/run"
)

// statusOptions are the options of `spade status`.
type statusOptions struct {
	globalOptions
	// Steps is --steps ("" for every step with work committed or submitted).
	Steps string
}

func newStatusCommand() *cli.Command {
	return &cli.Command{
		Name:  "status",
		Usage: "show a run's steps × stages: committed or not, and the Slurm jobs submitted for them",
		Description: "One line per step and due stage: the lake's commit state (for a sharded stage, how many shards\n" +
			"are in), the Slurm job of its newest submission (`spade run --executor slurm`) and each task's\n" +
			"state (squeue while the controller holds the job, sacct where the cluster keeps accounting,\n" +
			"\"gone from Slurm\" otherwise), and the log file of every task that ended without its work in the lake.\n" +
			"A pending task shows Slurm's reason in parentheses, marked ! when it will not clear by itself (a hold,\n" +
			"a failed dependency, a partition or per-job limit, or a wait for nodes when no node could ever hold the\n" +
			"request), and a \"will not start:\" line below the table says what to change.\n\n" +
			"Example: spade --lake s3://lake/p --run r1 status --steps 0-7",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "steps", Usage: "steps to show (" + steprun.StepsGrammar + "); default: every step with work"},
		},
		Action: func(c *cli.Context) error {
			return runStatus(c.Context, statusOptions{globalOptions: globalsFrom(c), Steps: c.String("steps")})
		},
	}
}

// runStatus prints the status table of the run.
func runStatus(ctx context.Context, opts statusOptions) error {
	var steps []int64
	if opts.Steps != "" {
		var err error
		if steps, err = steprun.ParseSteps(opts.Steps); err != nil {
			return asUsage(err)
		}
	}
	lk, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	sts, err := cluster.Status(ctx, lk, run, cfg, steprun.Stages(), steps)
	if err != nil {
		return err
	}
	cluster.PrintStatus(opts.Out, sts)
	return nil
}
