package main

import (
	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/regret"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	stageCommand{
		name:  stage.Regret,
		usage: "score a step's envs: hint regret, difficulty anchor, Designer rewards, memory at a pool end",
		description: "Reads the step's episodes and writes designer_rewards (every variant side by side: regret_anchor,\n" +
			"regret, anchor, ema_lp), the per-skill ema_state, and at the pool's last step the final rewards over the\n" +
			"pool's window and a snapshot of the FIFO memory.\n\n" +
			"Example: spade --run r1 regret --step 3",
		stageFor: func(*cli.Context, *stage.Env) (stage.Stage, error) { return regret.Stage{}, nil },
	}.register()
}
