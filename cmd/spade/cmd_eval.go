package main

import (
	"context"
	"errors"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/bench"
	"github.com/spadekit/spade/internal/config"
	evalstage "github.com/spadekit/spade/stages/eval"
	"github.com/spadekit/spade/stages/stage"
)

// evalOptions are the options of `spade eval`.
type evalOptions struct {
	stageOptions
	// Benches is --bench, comma-separated benchmark names ("" for the run's eval.benches).
	Benches string
	// Samples is --samples per item (0 for eval.samples, else the kind's default).
	Samples int
	// Weights is --weights: the served weights to call ("" for the step's newest published ones).
	Weights string
}

func newEvalCommand() *cli.Command {
	return &cli.Command{
		Name:  string(evalstage.Name),
		Usage: "score the Agent on imported benchmarks (one eval_results row per item and sample)",
		Description: `Asks the Agent (the weights the step calls, or --weights) every item of each benchmark, K samples
each with the kind's sampling defaults (the authors' evaluation settings; eval.* keys and --samples
override them), scores them and commits them in chunks of eval.chunk_items items, so a killed run
resumes at the first uncommitted chunk and shards split the chunks. Summaries: sql/eval_scores.sql.
` + "`spade eval import`" + ` reads an official harness's results instead (spade help eval import).

Example: spade --run r eval --step 100 --bench aime25,gpqa --samples 16`,
		Subcommands: []*cli.Command{newEvalImportCommand()},
		Flags: stageFlags(
			&cli.StringFlag{Name: "bench", Usage: "benchmarks to evaluate, comma-separated (default: the run's eval.benches)"},
			&cli.IntFlag{Name: "samples", Usage: "samples per item (default: eval.samples, else the kind's default)"},
			&cli.StringFlag{Name: "weights", Usage: "served weights to call instead of the step's newest published ones"},
		),
		Action: func(c *cli.Context) error {
			return runEval(c.Context, evalOptions{stageOptions: stageOptionsFrom(c), Benches: c.String("bench"),
				Samples: c.Int("samples"), Weights: c.String("weights")})
		},
	}
}

// runEval runs the eval stage at opts.Step on the named benchmarks, each of which must be imported.
func runEval(ctx context.Context, opts evalOptions) error {
	return runStage(ctx, opts.stageOptions, func(env *stage.Env) (stage.Stage, error) {
		if opts.Samples < 0 {
			return nil, usageError("--samples must be >= 1, got %d", opts.Samples)
		}
		env.Weights = opts.Weights
		s := evalstage.Stage{Samples: opts.Samples}
		list := opts.Benches
		if list == "" {
			list = env.Config.Eval.Benches
		}
		s.Benches = config.SplitList(list)
		if len(s.Benches) == 0 {
			return nil, usageError("name the benchmarks: --bench NAME[,NAME] (or set eval.benches)")
		}
		for _, b := range s.Benches {
			if _, err := bench.Items(ctx, env.Lake, b); err != nil {
				var inputErr *bench.InputError
				if errors.As(err, &inputErr) {
					return nil, asUsage(err)
				}
				return nil, err
			}
		}
		return s, nil
	})
}
