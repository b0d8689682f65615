package main

import (
	"context"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/lake"
)

// lakeVacuumOptions are the options of `spade lake vacuum`.
type lakeVacuumOptions struct {
	globalOptions
	// OlderThan is --older-than: only objects older than this are deleted.
	OlderThan time.Duration
	// DryRun is --dry-run: list what would be deleted, delete nothing.
	DryRun bool
}

func newLakeVacuumCommand() *cli.Command {
	return &cli.Command{
		Name:  "vacuum",
		Usage: "delete orphans and replaced generations no commit record references",
		Description: "Deletes what `spade lake verify` lists as orphans and temporaries, older than --older-than, and\n" +
			"never anything a commit record or manifest references. Safe while writers run, as long as --older-than\n" +
			"exceeds the longest stage's run time (a write in flight is younger). With no --run, every run.\n\n" +
			"Example: spade --run r1 lake vacuum --older-than 24h --dry-run",
		Flags: []cli.Flag{
			durationFlag("older-than", "1h", "delete only objects older than this"),
			&cli.BoolFlag{Name: "dry-run", Usage: "list what would be deleted, delete nothing"},
		},
		Action: func(c *cli.Context) error {
			return runLakeVacuum(c.Context, lakeVacuumOptions{globalOptions: globalsFrom(c),
				OlderThan: c.Duration("older-than"), DryRun: c.Bool("dry-run")})
		},
	}
}

// runLakeVacuum deletes the orphans and temporaries of the --run runs (or every run), printing each.
func runLakeVacuum(ctx context.Context, opts lakeVacuumOptions) error {
	lk, runs, err := opts.openLakeRuns(ctx)
	if err != nil {
		return err
	}
	verb := "removed"
	if opts.DryRun {
		verb = "would remove"
	}
	total := 0
	for _, run := range runs {
		removed, err := lk.Vacuum(ctx, run, lake.VacuumOptions{OlderThan: opts.OlderThan, DryRun: opts.DryRun})
		for _, p := range removed {
			fmt.Fprintf(opts.Out, "%s %s (%s)\n", verb, p.Key, p.Detail)
		}
		total += len(removed)
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(opts.Out, "%s %d object(s)\n", verb, total)
	return nil
}
