package main

import (
	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/rollout"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	stageCommand{
		name:  stage.Rollout,
		usage: "play the pool's envs: rollout.group_size episodes without and with the hint per env",
		description: "Plays every env of the step's pool (committed by the gate at the pool's refresh step) through the\n" +
			"real sandbox, the Agent served by llm.agent.* (checked before any work) calling the newest weights\n" +
			"published before the step (--weights names others). Writes episodes, turns and llm_calls. A progress\n" +
			"bar on a terminal, log lines otherwise.\n\n" +
			"Example: spade --run r1 rollout --step 2\n" +
			"         spade --run r1 rollout --step 2 --shard 0 --shards 4   # one of four processes",
		flags: []cli.Flag{weightsFlag()},
		stageFor: func(c *cli.Context, env *stage.Env) (stage.Stage, error) {
			env.Weights = c.String("weights")
			return rollout.Stage{}, nil
		},
	}.register()
}
