package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/rollout"
)

func init() {
	register(&cli.Command{
		Name:  "rollout",
		Usage: "play the pool's envs: rollout.group_size episodes without and with the hint per env",
		Description: "Plays every env of the newest pool at or before the step through the real sandbox, the Agent\n" +
			"served by llm.agent.* (checked before any work). Writes episodes, turns and llm_calls. A progress\n" +
			"bar on a terminal, log lines otherwise.\n\n" +
			"Example: spade --run r1 rollout --step 2\n" +
			"         spade --run r1 rollout --step 2 --shard 0 --shards 4   # one of four processes",
		Flags: append(stepFlags(),
			&cli.StringFlag{Name: "weights", Usage: "served name of the current trained weights (default: llm.agent.model)"}),
		Action: func(c *cli.Context) error {
			step, spec, lk, run, err := stageArgs(c)
			if err != nil {
				return err
			}
			opts := rollout.Options{Force: c.Bool("force"), Shard: spec.Index, Shards: spec.Shards(),
				WeightsVersion: c.String("weights"), Log: slog.Default(), Progress: rolloutProgressWriter(c.App.ErrWriter)}
			res, err := rollout.Run(c.Context, lk, run, step, opts)
			if err != nil {
				return err
			}
			if res.Skipped {
				fmt.Fprintf(c.App.Writer, "rollout: step %d already committed (use --force to redo it)\n", step)
				return nil
			}
			fmt.Fprintf(c.App.Writer, "rollout: step %d (pool %d): %d envs, %d episodes, %d turns, %d tokens; ended by %v\n",
				step, res.PoolStep, res.Envs, res.Episodes, res.Turns, res.Tokens, res.EndedBy)
			return nil
		},
	})
}

// rolloutProgressWriter returns w when it is a terminal (for a redrawn progress bar), else nil.
func rolloutProgressWriter(w io.Writer) io.Writer {
	if w == nil {
		w = os.Stderr
	}
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	info, err := f.Stat()
	if err != nil || info.Mode()&os.ModeCharDevice == 0 {
		return nil
	}
	return f
}
