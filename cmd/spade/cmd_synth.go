package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/synth"
	steprun "github.com/spadekit/spade/stages/run"
)

// synthOptions are the options of `spade synth`.
type synthOptions struct {
	globalOptions
	// Size is --size: small or paper.
	Size string
	// Variant is --variant: full, no_corpus or no_memory.
	Variant string
	// Steps is --steps in steprun.StepsGrammar, "" for the size's steps; a synthetic run starts at step 0,
	// so it must name 0-B (or 0).
	Steps string
	// Seed is --seed, the random seed.
	Seed uint64
	// Train is --train: also write train_metrics (synth.Options.Train).
	Train bool
}

func newSynthCommand() *cli.Command {
	return &cli.Command{
		Name:   "synth",
		Hidden: true,
		Usage:  "write a synthetic run (for tests, benchmarks and demos of the analytics)",
		Description: `Writes every table of a synthetic SPADE run through the real schemas: a moving curriculum, falling
formula disclosure, growing reward levels. --size paper is 400 steps × 24 envs × 32 episodes × ≤25 turns
(about 307,000 episodes and 4 million turns); --size small is a few seconds of data for tests.
--steps takes the grammar of spade run --steps; a synthetic run starts at step 0, so it names 0-B.

Example: spade --lake /tmp/lake --run synth synth --size paper
         spade --lake /tmp/lake --run s synth --steps 0-23`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "size", Value: "small", Usage: "small or paper"},
			&cli.StringFlag{Name: "variant", Value: "full", Usage: "full, no_corpus or no_memory"},
			&cli.StringFlag{Name: "steps", Usage: "the steps to write instead of the size's, from 0: 0-B (e.g. 0-23 for 24 steps)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "random seed"},
			&cli.BoolFlag{Name: "train", Usage: "also write train_metrics (training curves for the report, the viewer and the TensorBoard export)"},
		},
		Action: func(c *cli.Context) error {
			return runSynth(c.Context, synthOptions{globalOptions: globalsFrom(c), Size: c.String("size"),
				Variant: c.String("variant"), Steps: c.String("steps"), Seed: c.Uint64("seed"), Train: c.Bool("train")})
		},
	}
}

// runSynth writes the synthetic run named by --run.
func runSynth(ctx context.Context, opts synthOptions) error {
	run, err := opts.runName()
	if err != nil {
		return err
	}
	var o synth.Options
	switch opts.Size {
	case "small":
		o = synth.Small()
	case "paper":
		o = synth.Paper()
	default:
		return usageError("--size must be small or paper, got %q", opts.Size)
	}
	if opts.Steps != "" {
		steps, err := steprun.ParseSteps(opts.Steps)
		if err != nil {
			return asUsage(fmt.Errorf("synth: %w", err))
		}
		if last := steps[len(steps)-1]; steps[0] != 0 || last != int64(len(steps)-1) {
			if len(steps) == 1 { // a lone number read as a count: "24" for 24 steps
				last--
			}
			return usageError("synth: --steps %q: a synthetic run is written from step 0 without gaps, so name 0-B (--steps 0-%d writes %d steps)",
				opts.Steps, max(last, 1), max(last, 1)+1)
		}
		o.Steps = len(steps)
	}
	o.Seed, o.Train = opts.Seed, opts.Train
	o.Variant = synth.Variant(opts.Variant)
	o.Progress = opts.Progress
	lk, err := opts.openLake(ctx)
	if err != nil {
		return err
	}
	if err := synth.Write(ctx, lk, run, o); err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "wrote synthetic run %s (%d steps, variant %s)\n", run, o.Steps, o.Variant)
	return nil
}
