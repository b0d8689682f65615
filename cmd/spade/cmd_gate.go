package main

import (
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/gate"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	stageCommand{
		name:  stage.Gate,
		usage: "check a pool step's candidates in the sandbox and commit the accepted envs",
		description: "Runs every gate check on each candidate of the step, in order:\n" + checkOrder() +
			"writing one gate_results row per check. A slot whose candidates all fail goes back to the Designer\n" +
			"with the error, up to gate.max_attempts attempts. The accepted env of each slot forms the envs\n" +
			"partition of the step. Slots are split among shards by slot number.\n\n" +
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

// checkOrder lists the gate's checks in the order of its check tables (gate.CheckNames).
func checkOrder() string {
	games, tools := gate.CheckNames(schemas.SettingGames), gate.CheckNames(schemas.SettingTools)
	return "  " + strings.Join(games, ", ") + ",\n  and in the tools setting " + strings.Join(tools[len(games):], ", ") + ",\n"
}
