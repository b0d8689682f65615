package main

import (
	"fmt"
	"log/slog"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/generate"
)

func init() {
	register(&cli.Command{
		Name:  "generate",
		Usage: "ask the Environment Designer for one environment program and hint per slot",
		Description: "Reads the refresh step's samples and the newest memory snapshot, renders the Designer prompt of\n" +
			"the run's setting (embedded, or llm.prompt_file), calls llm.designer.* and writes candidates and\n" +
			"llm_calls. The endpoint and model are checked before any call. --weights names the served trained\n" +
			"weights (a LoRA adapter); without it the Designer calls llm.designer.model. With --shard i --shards n,\n" +
			"process i generates the slots with slot mod n = i (the gate's split).\n\n" +
			"Example: spade --run r1 generate --step 0",
		Flags: append(stepFlags(),
			&cli.StringFlag{Name: "weights", Usage: "served name of the current trained weights (default: llm.designer.model)"},
		),
		Action: func(c *cli.Context) error {
			step, spec, lk, run, err := stageArgs(c)
			if err != nil {
				return err
			}
			res, err := generate.Run(c.Context, lk, run, step, generate.Options{Force: c.Bool("force"), Shard: spec.Index, Shards: spec.Count,
				WeightsVersion: c.String("weights"), Log: slog.Default()})
			if err != nil {
				return err
			}
			if res.Skipped {
				fmt.Fprintf(c.App.Writer, "generate: step %d already committed (use --force to redo it)\n", step)
				return nil
			}
			fmt.Fprintf(c.App.Writer, "generate: step %d: %d candidates, %d parsed\n", step, res.Candidates, res.Parsed)
			return nil
		},
	})
}
