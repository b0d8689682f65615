package main

import (
	"errors"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/bench"
	evalstage "github.com/spadekit/spade/stages/eval"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	stageCommand{
		name:  evalstage.Name,
		usage: "score the Agent on imported benchmarks (one eval_results row per item and sample)",
		description: "Asks the Agent (the weights the step calls, or --weights) every item of each benchmark, K samples\n" +
			"each with the kind's sampling defaults (the authors' evaluation settings; eval.* keys and --samples\n" +
			"override them), scores them and commits them in chunks of eval.chunk_items items, so a killed run\n" +
			"resumes at the first uncommitted chunk and shards split the chunks. Summaries: sql/eval_scores.sql.\n\n" +
			"Example: spade --run r eval --step 100 --bench aime25,gpqa --samples 16",
		flags: []cli.Flag{
			&cli.StringFlag{Name: "bench", Usage: "benchmarks to evaluate, comma-separated (default: the run's eval.benches)"},
			&cli.IntFlag{Name: "samples", Usage: "samples per item (default: eval.samples, else the kind's default)"},
			&cli.StringFlag{Name: "weights", Usage: "served weights to call instead of the step's newest published ones"},
		},
		stageFor: func(c *cli.Context, env *stage.Env) (stage.Stage, error) {
			if c.Int("samples") < 0 {
				return nil, usageError("--samples must be >= 1, got %d", c.Int("samples"))
			}
			env.Weights = c.String("weights")
			s := evalstage.Stage{Samples: c.Int("samples")}
			list := c.String("bench")
			if list == "" {
				list = env.Config.Eval.Benches
			}
			for _, b := range strings.Split(list, ",") {
				if b = strings.TrimSpace(b); b != "" {
					s.Benches = append(s.Benches, b)
				}
			}
			if len(s.Benches) == 0 {
				return nil, usageError("name the benchmarks: --bench NAME[,NAME] (or set eval.benches)")
			}
			for _, b := range s.Benches {
				if _, err := bench.Items(c.Context, env.Lake, b); err != nil {
					var inputErr *bench.InputError
					if errors.As(err, &inputErr) {
						return nil, asUsage(err)
					}
					return nil, err
				}
			}
			return s, nil
		},
	}.register()
}
