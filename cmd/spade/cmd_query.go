package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
)

func init() {
	register(&cli.Command{
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
			query, err := querySQL(c)
			if err != nil {
				return err
			}
			format := c.String("format")
			if !duck.ValidFormat(format) {
				return usageError("--format must be table, csv, json or parquet, got %q", format)
			}
			lk, err := openLake(c)
			if err != nil {
				return err
			}
			runs, err := queryRuns(c, lk)
			if err != nil {
				return err
			}
			sess, err := duck.OpenRuns(c.Context, lk, runs...)
			if err != nil {
				if damage := lakeDamage(c, lk, runs); damage != nil {
					return damage
				}
				return err
			}
			defer sess.Close()
			out := c.App.Writer
			if path := c.String("out"); path != "" && format != "parquet" {
				f, err := os.Create(path)
				if err != nil {
					return asUsage(fmt.Errorf("--out: %w", err))
				}
				defer f.Close()
				out = f
			}
			if err := duck.Render(c.Context, sess.DB, query, format, c.String("out"), out); err != nil {
				if damage := lakeDamage(c, lk, runs); damage != nil {
					return damage // a corrupt or missing file, not the user's SQL (exit 1)
				}
				return asUsage(err)
			}
			return nil
		},
	})
}

func querySQL(c *cli.Context) (string, error) {
	switch {
	case c.String("file") != "":
		b, err := os.ReadFile(c.String("file"))
		if err != nil {
			return "", asUsage(fmt.Errorf("-f: %w", err))
		}
		return string(b), nil
	case c.Args().Len() > 0:
		return strings.Join(c.Args().Slice(), " "), nil
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

// queryRuns returns the --run names, or every run of the lake when none is given.
func queryRuns(c *cli.Context, lk *lake.Lake) ([]string, error) {
	runs := runFlags(c)
	for _, r := range runs {
		if _, err := lk.RunConfig(c.Context, r); errors.Is(err, lake.ErrNoRun) {
			return nil, asUsage(err)
		} else if err != nil {
			return nil, err // the storage failed: not the user's mistake
		}
	}
	if len(runs) > 0 {
		return runs, nil
	}
	return lk.Runs(c.Context)
}
