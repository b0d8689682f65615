package main

import (
	"context"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/stages/sample"
	"github.com/spadekit/spade/stages/stage"
)

func newSampleCommand() *cli.Command {
	return &cli.Command{
		Name:  string(stage.Sample),
		Usage: "draw a pool refresh's slots: the skill of each slot and a fresh corpus document",
		Description: `At a refresh step (a multiple of sample.refresh_every) picks the active skills of the window
(sample.skills_per_window of sample.skills, in the list's order with sample.skill_order = round_robin or
a seeded shuffle of it with seeded), spreads sample.envs_per_step slots over them and gives each slot a
corpus document not used before in the run (sample.doc_draw: uniform, or matched to the skill's domain),
cut to sample.excerpt_words words and sample.excerpt_chars characters. Writes samples. With
--shard i --shards n, process i writes the slots with slot mod n = i (each draws the whole step).

Example: spade --run r1 sample --step 0`,
		Flags: stageFlags(),
		Action: func(c *cli.Context) error {
			return runSample(c.Context, stageOptionsFrom(c))
		},
	}
}

// runSample runs the sample stage at opts.Step.
func runSample(ctx context.Context, opts stageOptions) error {
	return runStage(ctx, opts, func(*stage.Env) (stage.Stage, error) { return sample.Stage{}, nil })
}
