package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/gate"
	"github.com/spadekit/spade/stages/generate"
	steprun "github.com/spadekit/spade/stages/run"
)

func init() {
	register(&cli.Command{
		Name:  "gate",
		Usage: "check a pool step's candidates in the sandbox and commit the accepted envs",
		Description: "Runs every gate check on each candidate of the step, in order:\n" + checkOrder() +
			"writing one gate_results row per check. A slot whose candidates all fail goes back to the Designer\n" +
			"with the error, up to gate.max_attempts attempts. The accepted env of each slot forms the envs\n" +
			"partition of the step. Slots are split among shards by slot number.\n\n" +
			"Example: spade --run r1 gate --step 0\n" +
			"         spade --run r1 gate --step 0 --no-regenerate   # judge only the candidates already in the lake",
		Flags: append(stepFlags(),
			&cli.BoolFlag{Name: "no-regenerate", Usage: "do not ask the Designer again for failed slots"},
			&cli.BoolFlag{Name: "unsafe-no-isolation", Usage: "run generated code WITHOUT isolation when no sandbox works (dangerous)"},
		),
		Action: func(c *cli.Context) error {
			step, spec, lk, run, err := stageArgs(c)
			if err != nil {
				return err
			}
			opts := gate.Options{Shard: spec.Index, Shards: spec.Shards(), Force: c.Bool("force"),
				UnsafeNoIsolation: c.Bool("unsafe-no-isolation"), Log: slog.Default()}
			if !c.Bool("no-regenerate") {
				weights, err := steprun.WeightsVersion(c.Context, lk, run, step)
				if err != nil {
					return err
				}
				g, err := generate.NewGenerator(c.Context, lk, run, generate.Options{WeightsVersion: weights, Log: slog.Default()})
				if err != nil {
					return fmt.Errorf("gate: the Designer regenerates failed slots and is not reachable: %w (pass --no-regenerate to judge only the candidates in the lake)", err)
				}
				opts.Regenerator = g
			}
			res, err := gate.Run(c.Context, lk, run, step, opts)
			if err != nil {
				return err
			}
			if res.Skipped {
				fmt.Fprintf(c.App.Writer, "gate: step %d already committed (use --force to redo it)\n", step)
				return nil
			}
			fmt.Fprintf(c.App.Writer, "gate: step %d: %d of %d slots accepted, %d candidates checked (%d regenerated) in %.1fs\n",
				step, res.Accepted, res.Slots, res.Attempts, res.Regenerated, res.Elapsed.Seconds())
			return nil
		},
	})
}

// checkOrder lists the gate's check tables, one line each: the games checks, then the tools
// setting's extra ones.
func checkOrder() string {
	games, tools := gate.CheckNames(schemas.SettingGames), gate.CheckNames(schemas.SettingTools)
	return "  " + strings.Join(games, ", ") + ",\n  and in the tools setting " + strings.Join(tools[len(games):], ", ") + ",\n"
}
