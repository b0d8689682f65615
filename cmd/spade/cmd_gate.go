package main

import (
	"context"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/gate"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// gateOptions are the options of `spade gate`.
type gateOptions struct {
	stageOptions
	// NoRegenerate is --no-regenerate: judge only the candidates already in the lake.
	NoRegenerate bool
	// UnsafeNoIsolation is --unsafe-no-isolation: run generated code unconfined when no sandbox works.
	UnsafeNoIsolation bool
	// Weights is --weights: the served weights to call ("" for the newest published before the step).
	Weights string
}

func newGateCommand() *cli.Command {
	return &cli.Command{
		Name:  string(stage.Gate),
		Usage: "check a pool step's candidates in the sandbox and commit the accepted envs",
		Description: "Runs every gate check on each candidate of the step, in order:\n" + checkOrder() +
			"writing one gate_results row per check. A slot whose candidates all fail goes back to the Designer\n" +
			"with the error, up to gate.max_attempts attempts. The accepted env of each slot forms the envs\n" +
			"partition of the step. Slots are split among shards by slot number.\n\n" +
			"Example: spade --run r1 gate --step 0\n" +
			"         spade --run r1 gate --step 0 --no-regenerate   # judge only the candidates already in the lake",
		Flags: stageFlags(
			&cli.BoolFlag{Name: "no-regenerate", Usage: "do not ask the Designer again for failed slots"},
			&cli.BoolFlag{Name: "unsafe-no-isolation", Usage: "run generated code WITHOUT isolation when no sandbox works (dangerous)"},
			weightsFlag(),
		),
		Action: func(c *cli.Context) error {
			return runGate(c.Context, gateOptions{stageOptions: stageOptionsFrom(c), NoRegenerate: c.Bool("no-regenerate"),
				UnsafeNoIsolation: c.Bool("unsafe-no-isolation"), Weights: c.String("weights")})
		},
	}
}

// runGate runs the gate stage at opts.Step, regenerating failed slots through the Designer unless
// opts.NoRegenerate.
func runGate(ctx context.Context, opts gateOptions) error {
	return runStage(ctx, opts.stageOptions, func(env *stage.Env) (stage.Stage, error) {
		env.UnsafeNoIsolation = opts.UnsafeNoIsolation
		env.Weights = opts.Weights
		s := gate.Stage{NewHinter: steprun.Hinter}
		if !opts.NoRegenerate {
			s.NewRegenerator = steprun.Regenerator
		}
		return s, nil
	})
}

// checkOrder lists the gate's checks in the order of its check tables (gate.CheckNames).
func checkOrder() string {
	games, tools := gate.CheckNames(schemas.SettingGames), gate.CheckNames(schemas.SettingTools)
	return "  " + strings.Join(games, ", ") + ",\n  and in the tools setting " + strings.Join(tools[len(games):], ", ") + ",\n"
}
