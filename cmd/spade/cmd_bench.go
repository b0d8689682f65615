package main

import (
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/bench"
	"github.com/spadekit/spade/schemas"
)

func init() {
	register(&cli.Command{
		Name:  "bench",
		Usage: "manage the downstream benchmarks `spade eval` scores the Agent on",
		Subcommands: []*cli.Command{{
			Name:      "import",
			Usage:     "import a benchmark's items (Parquet or JSONL, the layout of its public release) under a name",
			ArgsUsage: "FILE... | --kind env_pool [--pool NAME]... [RUN@STEP...]",
			Description: "Kinds and the columns each reads (README.md, \"Evaluation\"):\n" +
				"  math           id, problem|question, answer                        (AIME)\n" +
				"  choice         id|Record ID, question|Question, options + answer letter,\n" +
				"                 or Correct Answer + Incorrect Answer 1..3            (GPQA-Diamond)\n" +
				"  code           question_id, question_content, public_test_cases, private_test_cases,\n" +
				"                 starter_code, metadata.func_name                      (LiveCodeBench)\n" +
				"  function_call  id, question, function, ground_truth (inline or a possible_answer file) (BFCL)\n" +
				"  env_pool       from the lake, not files: --pool NAME (`spade pool import`'s pools: id, code,\n" +
				"                 setting, class_name, skill) and/or RUN@STEP (a run's envs at a pool step: env_id,\n" +
				"                 code, ...); hints are not read: the Agent plays each env without one, scored\n" +
				"                 by the episode's outcome\n" +
				"Reads every file first and commits nothing unless all are valid; items are deduplicated by id.\n\n" +
				"Example: spade bench import --name aime25 --kind math testdata/bench/math.jsonl\n" +
				"         spade bench import --name heldout --kind env_pool --pool fixed myrun@0",
			Flags: []cli.Flag{
				&cli.StringFlag{Name: "name", Required: true, Usage: "benchmark name (spade eval --bench NAME)"},
				&cli.StringFlag{Name: "kind", Required: true, Usage: "math, choice, code, function_call or env_pool"},
				&cli.StringSliceFlag{Name: "pool", Usage: "env_pool: an imported pool (spade pool import --name NAME) to take the programs of"},
			},
			Action: func(c *cli.Context) error {
				lk, err := openLake(c)
				if err != nil {
					return err
				}
				kind, err := bench.ParseKind(c.String("kind"))
				if err == nil {
					var res bench.ImportResult
					if kind == schemas.BenchEnvPool {
						res, err = bench.ImportEnvPool(c.Context, lk, c.String("name"), c.StringSlice("pool"), c.Args().Slice())
					} else if len(c.StringSlice("pool")) > 0 {
						err = &bench.InputError{File: "--pool", Problem: "only for --kind env_pool"}
					} else {
						res, err = bench.Import(c.Context, lk, c.String("name"), kind, c.Args().Slice())
					}
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
