package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/rollout"
	"github.com/spadekit/spade/stages/stage"
)

// rolloutOptions are the options of `spade rollout`.
type rolloutOptions struct {
	stageOptions
	// Weights is --weights: the served weights to call ("" for the newest published before the step).
	Weights string
}

func newRolloutCommand() *cli.Command {
	return &cli.Command{
		Name:  string(stage.Rollout),
		Usage: "play the pool's envs: rollout.group_size episodes without and with the hint per env",
		Description: `Plays every env of the step's pool (committed by the gate at the pool's refresh step) through the
real sandbox, the Agent served by llm.agent.* (checked before any work) calling the newest weights
published before the step (--weights names others). Writes episodes, turns and llm_calls. A progress
bar on a terminal, log lines otherwise.

Example: spade --run r1 rollout --step 2
         spade --run r1 rollout --step 2 --shard 0 --shards 4   # one of four processes`,
		Flags: stageFlags(weightsFlag()),
		Action: func(c *cli.Context) error {
			return runRollout(c.Context, rolloutOptions{stageOptions: stageOptionsFrom(c), Weights: c.String("weights")})
		},
	}
}

// runRollout runs the rollout stage at opts.Step.
func runRollout(ctx context.Context, opts rolloutOptions) error {
	return runStage(ctx, opts.stageOptions, func(env *stage.Env) (stage.Stage, error) {
		env.Weights = opts.Weights
		return rollout.Stage{}, nil
	})
}
