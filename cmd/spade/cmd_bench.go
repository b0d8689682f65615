package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/bench"
)

func init() {
	register(&cli.Command{
		Name:  "bench",
		Usage: "manage the downstream benchmarks `spade eval` scores the Agent on",
		Subcommands: []*cli.Command{{
			Name:      "import",
			Usage:     "import a benchmark's items (Parquet or JSONL, the layout of its public release) under a name",
			ArgsUsage: "FILE...",
			Description: "Kinds and the columns each reads (README.md, \"Evaluation\"):\n" +
				"  math           id, problem|question, answer                        (AIME)\n" +
				"  choice         id|Record ID, question|Question, options + answer letter,\n" +
				"                 or Correct Answer + Incorrect Answer 1..3            (GPQA-Diamond)\n" +
				"  code           question_id, question_content, public_test_cases, private_test_cases,\n" +
				"                 starter_code, metadata.func_name                      (LiveCodeBench)\n" +
				"  function_call  id, question, function, ground_truth (inline or a possible_answer file) (BFCL)\n" +
				"Reads every file first and commits nothing unless all are valid; items are deduplicated by id.\n\n" +
				"Example: spade bench import --name aime25 --kind math testdata/bench/math.jsonl",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "name", Required: true, Usage: "benchmark name (spade eval --bench NAME)"},
				&cli.StringFlag{Name: "kind", Required: true, Usage: "math, choice, code or function_call"},
			},
			Action: func(c *cli.Context) error {
				lk, err := openLake(c)
				if err != nil {
					return err
				}
				kind, err := bench.ParseKind(c.String("kind"))
				if err == nil {
					var res bench.ImportResult
					res, err = bench.Import(c.Context, lk, c.String("name"), kind, c.Args().Slice())
					if err == nil {
						fmt.Fprintf(c.App.Writer, "bench %s (%s): %d imported, %d skipped as duplicates, %d items in total\n",
							c.String("name"), kind, res.Imported, res.Skipped, res.Total)
						return nil
					}
				}
				var inputErr *bench.InputError
				if errors.As(err, &inputErr) {
					return asUsage(fmt.Errorf("bench import: %w; nothing was imported", err))
				}
				return err
			},
		}},
	})
}
