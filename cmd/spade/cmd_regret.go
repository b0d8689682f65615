package main

import (
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/regret"
)

func init() {
	register(&cli.Command{
		Name:  "regret",
		Usage: "score a step's envs: hint regret, difficulty anchor, Designer rewards, memory at a pool end",
		Description: "Reads the step's episodes and writes designer_rewards (every variant side by side: regret_anchor,\n" +
			"regret, anchor, ema_lp), the per-skill ema_state, and at the pool's last step the final rewards over the\n" +
			"pool's window and a snapshot of the FIFO memory.\n\n" +
			"Example: spade --run r1 regret --step 3",
		Flags: stepFlags(),
		Action: func(c *cli.Context) error {
			step, spec, lk, run, err := stageArgs(c)
			if err != nil {
				return err
			}
			res, err := regret.Run(c.Context, lk, run, step, regret.Options{Shard: spec, Force: c.Bool("force"), Log: slog.Default()})
			if err != nil {
				return err
			}
			switch {
			case res.Skipped:
				fmt.Fprintf(c.App.Writer, "regret: step %d already committed (use --force to redo it)\n", step)
			case res.PoolEnd:
				fmt.Fprintf(c.App.Writer, "regret: step %d: %d envs scored (%d excluded), pool end: final rewards, memory %d entries\n", step, res.Envs, res.Excluded, res.Memory)
			default:
				fmt.Fprintf(c.App.Writer, "regret: step %d: %d envs scored (%d excluded)\n", step, res.Envs, res.Excluded)
			}
			return nil
		},
	})
}
