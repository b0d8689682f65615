package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/stage"
)

// generateOptions are the options of `spade generate`.
type generateOptions struct {
	stageOptions
	// Weights is --weights: the served weights to call ("" for the newest published before the step).
	Weights string
}

func newGenerateCommand() *cli.Command {
	return &cli.Command{
		Name:  string(stage.Generate),
		Usage: "ask the Environment Designer for one environment program and hint per slot",
		Description: "Reads the refresh step's samples and the newest memory snapshot, renders the Designer prompt of\n" +
			"the run's setting (embedded, or llm.prompt_file), calls llm.designer.* and writes candidates and\n" +
			"llm_calls. The endpoint and model are checked before any call. The Designer calls the newest weights\n" +
			"published before the step (as `spade run` does; llm.designer.model before any); --weights names other\n" +
			"served weights. With --shard i --shards n, process i generates the slots with slot mod n = i (the\n" +
			"gate's split).\n\n" +
			"Example: spade --run r1 generate --step 0",
		Flags: stageFlags(weightsFlag()),
		Action: func(c *cli.Context) error {
			return runGenerate(c.Context, generateOptions{stageOptions: stageOptionsFrom(c), Weights: c.String("weights")})
		},
	}
}

// runGenerate runs the generate stage at opts.Step.
func runGenerate(ctx context.Context, opts generateOptions) error {
	return runStage(ctx, opts.stageOptions, func(env *stage.Env) (stage.Stage, error) {
		env.Weights = opts.Weights
		return generate.Stage{}, nil
	})
}

// weightsFlag is --weights of the stages that call the model (generate, gate, rollout).
func weightsFlag() cli.Flag {
	return &cli.StringFlag{Name: "weights", Usage: "served name of the weights to call (default: the newest published before the step, else the configured model)"}
}
