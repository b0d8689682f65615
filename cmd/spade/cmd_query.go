package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
)

// queryOptions are the options of `spade query`.
type queryOptions struct {
	globalOptions
	// File is -f/--file, a file to read the SQL from ("" for the arguments or stdin).
	File string
	// Format is --format: table, csv, json or parquet.
	Format string
	// OutFile is --out, the file to write the result to ("" for stdout; required for parquet).
	OutFile string
}

func newQueryCommand() *cli.Command {
	return &cli.Command{
		Name:      "query",
		Usage:     "run DuckDB SQL over the tables of one or more runs",
		ArgsUsage: "[SQL]",
		Description: "Every table of the chosen runs is a view (`from episodes`), with a leading `run` column; several\n" +
			"--run flags union the runs. `corpus` is the run's corpus. SQL comes from the argument, -f FILE, or stdin.\n" +
			"With no --run, every run of the lake is included. The models of sql/ are views too (`from learnable_band`,\n" +
			"`from dashboard`, ...), with the first run's metrics.* and sample.* settings as their parameters.\n\n" +
			"Example: spade --run r1 query \"select hinted, avg(return) from episodes group by all\"",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "file", Aliases: []string{"f"}, Usage: "read the SQL from FILE"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, csv, json or parquet"},
			&cli.StringFlag{Name: "out", Usage: "write the result to FILE (required for parquet)"},
		},
		Action: func(c *cli.Context) error {
			return runQuery(c.Context, queryOptions{globalOptions: globalsFrom(c), File: c.String("file"),
				Format: c.String("format"), OutFile: c.String("out")}, c.Args().Slice())
		},
	}
}

// runQuery runs the SQL (args joined, or opts.File, or stdin) over the --run runs, or every run.
func runQuery(ctx context.Context, opts queryOptions, args []string) error {
	query, err := querySQL(opts, args)
	if err != nil {
		return err
	}
	format := opts.Format
	if !duck.ValidFormat(format) {
		return usageError("--format must be table, csv, json or parquet, got %q", format)
	}
	lk, err := opts.openExistingLake(ctx)
	if err != nil {
		return err
	}
	runs, err := queryRuns(ctx, opts.globalOptions, lk, opts.Runs)
	if err != nil {
		return err
	}
	sess, err := analytics.OpenRuns(ctx, lk, runs...)
	if err != nil {
		if damage := lakeDamage(ctx, opts.globalOptions, lk, runs); damage != nil {
			return damage
		}
		return err
	}
	defer sess.Close()
	out := opts.Out
	if path := opts.OutFile; path != "" && format != "parquet" {
		f, err := os.Create(path)
		if err != nil {
			return asUsage(fmt.Errorf("--out: %w", err))
		}
		defer f.Close()
		out = f
	}
	if err := duck.Render(ctx, sess.DB, query, format, opts.OutFile, out); err != nil {
		if damage := lakeDamage(ctx, opts.globalOptions, lk, runs); damage != nil {
			return damage // a corrupt or missing file, not the user's SQL (exit 1)
		}
		return asUsage(err)
	}
	return nil
}

// querySQL returns the query: from opts.File, else the arguments joined by spaces, else stdin when it
// is not a terminal.
func querySQL(opts queryOptions, args []string) (string, error) {
	switch {
	case opts.File != "":
		b, err := os.ReadFile(opts.File)
		if err != nil {
			return "", asUsage(fmt.Errorf("-f: %w", err))
		}
		return string(b), nil
	case len(args) > 0:
		return strings.Join(args, " "), nil
	}
	if st, _ := os.Stdin.Stat(); st != nil && st.Mode()&os.ModeCharDevice == 0 {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(string(b)) != "" {
			return string(b), nil
		}
	}
	return "", usageError("no SQL given: pass it as an argument, with -f FILE, or on stdin")
}

// queryRuns returns runs, each checked to exist, or every run of the lake when runs is empty.
func queryRuns(ctx context.Context, opts globalOptions, lk *lake.Lake, runs []string) ([]string, error) {
	for _, r := range runs {
		if err := opts.checkRun(ctx, lk, r); err != nil {
			return nil, err // a usage error for a missing run; a storage failure is not the user's mistake
		}
	}
	if len(runs) > 0 {
		return runs, nil
	}
	return lk.Runs(ctx)
}
