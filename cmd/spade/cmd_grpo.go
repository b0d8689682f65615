package main

import (
	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/grpo"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	stageCommand{
		name:  stage.GRPO,
		usage: "assemble a step's GRPO batches (Agent every step, Designer at a pool end) and run the trainer",
		description: "Reads the step's episodes, turns and llm_calls (and at a pool's last step its final designer_rewards),\n" +
			"writes grpo_batches in batches of grpo.global_batch, then runs grpo.trainer (none: batches only; torch:\n" +
			"the PyTorch trainer) and writes train_metrics. Token ids and log-probs come from llm_calls, never from\n" +
			"re-tokenizing.\n\n" +
			"Example: spade --run r1 grpo --step 3",
		flags: []cli.Flag{
			&cli.StringFlag{Name: "trainer-dir", Usage: "keep the trainer's per-step files (batch, config, metrics) under DIR"},
		},
		stageFor: func(c *cli.Context, env *stage.Env) (stage.Stage, error) {
			env.TrainerDir = c.String("trainer-dir")
			return grpo.Stage{}, nil
		},
	}.register()
}
