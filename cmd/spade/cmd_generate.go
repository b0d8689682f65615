package main

import (
	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	stageCommand{
		name:  stage.Generate,
		usage: "ask the Environment Designer for one environment program and hint per slot",
		description: "Reads the refresh step's samples and the newest memory snapshot, renders the Designer prompt of\n" +
			"the run's setting (embedded, or llm.prompt_file), calls llm.designer.* and writes candidates and\n" +
			"llm_calls. The endpoint and model are checked before any call. The Designer calls the newest weights\n" +
			"published before the step (as `spade run` does; llm.designer.model before any); --weights names other\n" +
			"served weights. With --shard i --shards n, process i generates the slots with slot mod n = i (the\n" +
			"gate's split).\n\n" +
			"Example: spade --run r1 generate --step 0",
		flags: []cli.Flag{weightsFlag()},
		stageFor: func(c *cli.Context, env *stage.Env) (stage.Stage, error) {
			env.Weights = c.String("weights")
			return generate.Stage{}, nil
		},
	}.register()
}

// weightsFlag is --weights of the stages that call the model (generate, gate, rollout).
func weightsFlag() cli.Flag {
	return &cli.StringFlag{Name: "weights", Usage: "served name of the weights to call (default: the newest published before the step, else the configured model)"}
}
