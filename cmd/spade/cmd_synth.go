package main

import (
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/synth"
)

func init() {
	register(&cli.Command{
		Name:   "synth",
		Hidden: true,
		Usage:  "write a synthetic run (for tests, benchmarks and demos of the analytics)",
		Description: "Writes every table of a synthetic SPADE run through the real schemas: a moving curriculum, falling\n" +
			"formula disclosure, growing reward levels. --size paper is 400 steps × 24 envs × 32 episodes × ≤25 turns\n" +
			"(about 307,000 episodes and 4 million turns); --size small is a few seconds of data for tests.\n\n" +
			"Example: spade --lake /tmp/lake --run synth synth --size paper",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Value: "small", Usage: "small or paper"},
			&cli.StringFlag{Name: "variant", Value: "full", Usage: "full, no_corpus or no_memory"},
			&cli.IntFlag{Name: "steps", Usage: "override the number of steps"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
		},
		Action: func(c *cli.Context) error {
			run, err := runName(c)
			if err != nil {
				return err
			}
			var o synth.Options
			switch c.String("size") {
			case "small":
				o = synth.Small()
			case "paper":
				o = synth.Paper()
			default:
				return usageError("--size must be small or paper, got %q", c.String("size"))
			}
			if n := c.Int("steps"); n > 0 {
				o.Steps = n
			}
			o.Seed = c.Uint64("seed")
			o.Variant = synth.Variant(c.String("variant"))
			o.Progress = reporter
			lk, err := openLake(c)
			if err != nil {
				return err
			}
			if err := synth.Write(c.Context, lk, run, o); err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "wrote synthetic run %s (%d steps, variant %s)\n", run, o.Steps, o.Variant)
			return nil
		},
	})
}
