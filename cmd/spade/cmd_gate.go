package main

import (
	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/gate"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	stageCommand{
		name:  stage.Gate,
		usage: "check a pool step's candidates in the sandbox and commit the accepted envs",
		description: "Runs every gate check on each candidate of the step, in order (static, load, instantiate,\n" +
			"deterministic reset, smoke probes, trivial, hint leak; for the tools setting also tools_schema, tools_reset,\n" +
			"tools_conditions and the LLM screen), writing one gate_results row per check. A slot whose candidates all\n" +
			"fail goes back to the Designer with the error, up to gate.max_attempts attempts. The accepted env of each\n" +
			"slot forms the envs partition of the step. Slots are split among shards by slot number.\n\n" +
			"Example: spade --run r1 gate --step 0\n" +
			"         spade --run r1 gate --step 0 --no-regenerate   # judge only the candidates already in the lake",
		flags: []cli.Flag{
			&cli.BoolFlag{Name: "no-regenerate", Usage: "do not ask the Designer again for failed slots"},
			&cli.BoolFlag{Name: "unsafe-no-isolation", Usage: "run generated code WITHOUT isolation when no sandbox works (dangerous)"},
			weightsFlag(),
		},
		stageFor: func(c *cli.Context, env *stage.Env) (stage.Stage, error) {
			env.UnsafeNoIsolation = c.Bool("unsafe-no-isolation")
			env.Weights = c.String("weights")
			s := gate.Stage{NewHinter: steprun.Hinter}
			if !c.Bool("no-regenerate") {
				s.NewRegenerator = steprun.Regenerator
			}
			return s, nil
		},
	}.register()
}
