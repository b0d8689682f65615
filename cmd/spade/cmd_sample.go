package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/sample"
)

func init() {
	register(&cli.Command{
		Name:  "sample",
		Usage: "draw a pool refresh's slots: the skill of each slot and a fresh corpus document",
		Description: "At a refresh step (a multiple of sample.refresh_every) picks the active skills of the window\n" +
			"(sample.skills_per_window of six, rotating from the run seed), spreads sample.envs_per_step slots over\n" +
			"them and gives each slot a corpus document not used before in the run. Writes samples. With\n" +
			"--shard i --shards n, process i writes the slots with slot mod n = i (each draws the whole step).\n\n" +
			"Example: spade --run r1 sample --step 0",
		Flags: stepFlags(),
		Action: func(c *cli.Context) error {
			step, spec, lk, run, err := stageArgs(c)
			if err != nil {
				return err
			}
			res, err := sample.Run(c.Context, lk, run, step, sample.Options{Force: c.Bool("force"), Shard: spec.Index, Shards: spec.Count, Log: slog.Default()})
			if errors.Is(err, sample.ErrNotRefreshStep) {
				return asUsage(err)
			}
			if err != nil {
				return err
			}
			if res.Skipped {
				fmt.Fprintf(c.App.Writer, "sample: step %d already committed (use --force to redo it)\n", step)
				return nil
			}
			fmt.Fprintf(c.App.Writer, "sample: step %d: %d slots (%d reused documents)\n", step, res.Rows, res.Reused)
			return nil
		},
	})
}
