package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/grpo"
	"github.com/spadekit/spade/stages/stage"
)

// grpoOptions are the options of `spade grpo`.
type grpoOptions struct {
	stageOptions
	// TrainerDir is --trainer-dir: where the trainer's per-step files are kept ("" keeps none).
	TrainerDir string
}

func newGRPOCommand() *cli.Command {
	return &cli.Command{
		Name:  string(stage.GRPO),
		Usage: "assemble a step's GRPO batches (Agent every step, Designer at a pool end) and run the trainer",
		Description: `Reads the step's episodes, turns and llm_calls (and at a pool's last step its final designer_rewards),
writes grpo_batches in batches of grpo.global_batch, then runs grpo.trainer (none: batches only; torch:
the PyTorch trainer) and writes train_metrics. Token ids and log-probs come from llm_calls, never from
re-tokenizing.

Example: spade --run r1 grpo --step 3`,
		Flags: stageFlags(
			&cli.StringFlag{Name: "trainer-dir", Usage: "keep the trainer's per-step files (batch, config, metrics) under DIR"},
		),
		Action: func(c *cli.Context) error {
			return runGRPO(c.Context, grpoOptions{stageOptions: stageOptionsFrom(c), TrainerDir: c.String("trainer-dir")})
		},
	}
}

// runGRPO runs the grpo stage at opts.Step.
func runGRPO(ctx context.Context, opts grpoOptions) error {
	return runStage(ctx, opts.stageOptions, func(env *stage.Env) (stage.Stage, error) {
		env.TrainerDir = opts.TrainerDir
		return grpo.Stage{}, nil
	})
}
