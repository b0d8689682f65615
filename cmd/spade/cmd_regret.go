package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/regret"
	"github.com/spadekit/spade/stages/stage"
)

func newRegretCommand() *cli.Command {
	return &cli.Command{
		Name:  string(stage.Regret),
		Usage: "score a step's envs: hint regret, difficulty anchor, Designer rewards, memory at a pool end",
		Description: `Reads the step's episodes and writes designer_rewards (every variant side by side: regret_anchor,
regret, anchor, ema_lp), the per-skill ema_state, and at the pool's last step the final rewards over the
pool's window and a snapshot of the FIFO memory.

Example: spade --run r1 regret --step 3`,
		Flags: stageFlags(),
		Action: func(c *cli.Context) error {
			return runRegret(c.Context, stageOptionsFrom(c))
		},
	}
}

// runRegret runs the regret stage at opts.Step.
func runRegret(ctx context.Context, opts stageOptions) error {
	return runStage(ctx, opts, func(*stage.Env) (stage.Stage, error) { return regret.Stage{}, nil })
}
