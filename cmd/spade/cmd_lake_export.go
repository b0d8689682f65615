package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/export"
)

func newLakeExportCommand() *cli.Command {
	return &cli.Command{
		Name:      "export",
		Usage:     "write a run's committed rows as plain Parquet any engine reads with a glob",
		ArgsUsage: "DEST",
		Description: "Writes DEST/<table>/data.parquet for every table of the run: committed rows only (what `spade query`\n" +
			"sees), a leading `run` column, `step` a BIGINT column. Read it with any engine:\n" +
			"read_parquet('DEST/episodes/*.parquet'). DEST must not exist or be empty.\n\n" +
			"Example: spade --run r1 lake export ./r1-export",
		Action: func(c *cli.Context) error {
			return runLakeExport(c.Context, globalsFrom(c), c.Args().Slice())
		},
	}
}

// runLakeExport exports the single --run to the directory args[0] (export.Run).
func runLakeExport(ctx context.Context, opts globalOptions, args []string) error {
	if len(args) != 1 {
		return usageError("lake export takes one DEST directory, got %d arguments", len(args))
	}
	dest := args[0]
	lk, err := opts.openExistingLake(ctx)
	if err != nil {
		return err
	}
	run, err := opts.runName()
	if err != nil {
		return err
	}
	if err := opts.checkRun(ctx, lk, run); err != nil {
		return err
	}
	// export's errors start with "export: ", so the user reads "lake export: ...".
	tables, err := export.Run(ctx, lk, run, dest)
	if errors.Is(err, export.ErrNotEmpty) {
		return asUsage(fmt.Errorf("lake %w", err))
	}
	if err != nil {
		return fmt.Errorf("lake %w", err)
	}
	fmt.Fprintf(opts.Out, "exported %d tables of run %s to %s: read_parquet('%s/<table>/*.parquet')\n", len(tables), run, dest, dest)
	return nil
}
