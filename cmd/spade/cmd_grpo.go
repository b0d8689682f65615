package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/grpo"
)

func init() {
	register(&cli.Command{
		Name:  "grpo",
		Usage: "assemble a step's GRPO batches (Agent every step, Designer at a pool end) and run the trainer",
		Description: "Reads the step's episodes, turns and llm_calls (and at a pool's last step its final designer_rewards),\n" +
			"writes grpo_batches in batches of grpo.global_batch, then runs grpo.trainer (none: batches only; torch:\n" +
			"the PyTorch trainer) and writes train_metrics. Token ids and log-probs come from llm_calls, never from\n" +
			"re-tokenizing.\n\n" +
			"Example: spade --run r1 grpo --step 3",
		Flags: append(stepFlags(),
			&cli.StringFlag{Name: "trainer-dir", Usage: "keep the trainer's per-step files (batch, config, metrics) under DIR"}),
		Action: func(c *cli.Context) error {
			step, spec, lk, run, err := stageArgs(c)
			if err != nil {
				return err
			}
			res, err := grpo.Run(c.Context, lk, run, step, grpo.Options{Shard: spec, Force: c.Bool("force"),
				TrainerLog: os.Stderr, WorkDir: c.String("trainer-dir"), Log: slog.Default()})
			if err != nil {
				return err
			}
			switch {
			case res.Skipped:
				fmt.Fprintf(c.App.Writer, "grpo: step %d already committed (use --force to redo it)\n", step)
			case !res.Trained:
				fmt.Fprintf(c.App.Writer, "grpo: step %d: shard written (%s); the last shard commits and trains\n", step, spec)
			default:
				fmt.Fprintf(c.App.Writer, "grpo: step %d: %d agent and %d designer samples in %d batches; %d train_metrics rows\n",
					step, res.AgentSamples, res.DesignerSamples, res.Batches, len(res.Metrics))
			}
			return nil
		},
	})
}
