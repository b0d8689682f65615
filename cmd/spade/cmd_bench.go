package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/bench"
	"github.com/spadekit/spade/schemas"
)

func newBenchCommand() *cli.Command {
	return &cli.Command{
		Name:        "bench",
		Usage:       "manage the downstream benchmarks `spade eval` scores the Agent on",
		Subcommands: []*cli.Command{newBenchImportCommand()},
	}
}

// benchImportOptions are the options of `spade bench import`.
type benchImportOptions struct {
	globalOptions
	// Name is --name, the benchmark's name (spade eval --bench NAME).
	Name string
	// Kind is --kind: math, choice, code, function_call or env_pool.
	Kind string
	// Pools is --pool (env_pool only): imported pools to take the programs of.
	Pools []string
}

func newBenchImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import a benchmark's items (Parquet or JSONL, the layout of its public release) under a name",
		ArgsUsage: "FILE... | --kind env_pool [--pool NAME]... [RUN@STEP...]",
		Description: "Kinds and the columns each reads (docs/evaluation.md, \"Benchmark kinds\"):\n" +
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
			return runBenchImport(c.Context, benchImportOptions{globalOptions: globalsFrom(c), Name: c.String("name"),
				Kind: c.String("kind"), Pools: c.StringSlice("pool")}, c.Args().Slice())
		},
	}
}

// runBenchImport imports the items of args (files, or for env_pool RUN@STEP envs) as the benchmark
// opts.Name; nothing is imported unless every input is valid.
func runBenchImport(ctx context.Context, opts benchImportOptions, args []string) error {
	lk, err := opts.openLake(ctx)
	if err != nil {
		return err
	}
	kind, err := bench.ParseKind(opts.Kind)
	if err == nil {
		var res bench.ImportResult
		if kind == schemas.BenchEnvPool {
			res, err = bench.ImportEnvPool(ctx, lk, opts.Name, opts.Pools, args)
		} else if len(opts.Pools) > 0 {
			err = &bench.InputError{File: "--pool", Problem: "only for --kind env_pool"}
		} else {
			res, err = bench.Import(ctx, lk, opts.Name, kind, args)
		}
		if err == nil {
			fmt.Fprintf(opts.Out, "bench %s (%s): %d imported, %d skipped as duplicates, %d items in total\n",
				opts.Name, kind, res.Imported, res.Skipped, res.Total)
			return nil
		}
	}
	var inputErr *bench.InputError
	if errors.As(err, &inputErr) {
		return asUsage(fmt.Errorf("bench import: %w; nothing was imported", err))
	}
	return err
}
