package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/harness"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// evalImportOptions are the options of `spade eval import`.
type evalImportOptions struct {
	globalOptions
	// Format is --format: which harness wrote the results (harness.Formats).
	Format string
	// Step is --step: the step whose checkpoint the harness evaluated.
	Step int64
	// Weights is --weights: the weights version to tag the rows with ("" for the step's, as `spade eval`
	// calls them: stage.WeightsVersion).
	Weights string
	// Force is --force: replace the format's import at the step.
	Force bool
}

func newEvalImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "import an official harness's results for a step's checkpoint into eval_results",
		ArgsUsage: "DIR",
		Description: `Reads the result files an official harness wrote below DIR and commits one eval_results row per
item and sample with the suite's own score, at --step and tagged with the weights that step's stages
call (as spade eval does), in one commit: a bad file commits nothing. Formats and benchmarks
(docs/evaluation.md, "Official harnesses", has the commands that run each harness on a checkpoint):
  bfcl           BFCL_v4_<category>_score.json + _result.json   bfcl_v4_<category>
  tau2           tau2's results JSON (info, simulations)       tau2_<domain>, one sample per trial
  acebench       data_agent_<category>_score.json              acebench_agent_<category>
  lcb            lcb_runner's *_eval_all.json                  livecodebench_v6
  reasoning-gym  the eval script's <category>/<dataset>.json   reasoning_gym_<category>
A format already imported at the step is refused; --force replaces that import whole.

Example: spade --run r eval import --format bfcl --step 100 ~/bfcl-workdir`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Required: true, Usage: "the harness: " + schemas.JoinValues(harness.Formats(), ", ")},
			&cli.Int64Flag{Name: "step", Required: true, Usage: "the step whose checkpoint the harness evaluated"},
			&cli.StringFlag{Name: "weights", Usage: "weights version to record instead of the step's newest published one"},
			&cli.BoolFlag{Name: "force", Usage: "replace this format's import at the step"},
		},
		Action: func(c *cli.Context) error {
			return runEvalImport(c.Context, evalImportOptions{globalOptions: globalsFrom(c), Format: c.String("format"),
				Step: c.Int64("step"), Weights: c.String("weights"), Force: c.Bool("force")}, c.Args().Slice())
		},
	}
}

// runEvalImport imports the results below the one DIR of args into the --run at opts.Step.
func runEvalImport(ctx context.Context, opts evalImportOptions, args []string) error {
	if len(args) != 1 {
		return usageError("name one folder of results (DIR), got %d arguments", len(args))
	}
	if opts.Step < 0 {
		return usageError("--step must be >= 0, got %d", opts.Step)
	}
	format, err := harness.ParseFormat(opts.Format)
	if err != nil {
		return asUsage(err)
	}
	lk, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	weights := opts.Weights
	if weights == "" {
		if weights, err = stage.WeightsVersion(ctx, lk, run, cfg, opts.Step); err != nil {
			return err
		}
	}
	res, err := harness.Import(ctx, lk, harness.Options{Run: run, Step: opts.Step, Weights: weights, Format: format,
		Dir: args[0], Force: opts.Force})
	var inputErr *harness.InputError
	if errors.As(err, &inputErr) {
		return asUsage(fmt.Errorf("eval import: %w; nothing was imported", err))
	}
	if err != nil {
		return err
	}
	verb := "imported"
	if res.Replaced {
		verb = "replaced"
	}
	for _, b := range res.Benches {
		fmt.Fprintf(opts.Out, "%s %s: %d items, %d samples, mean score %.3f\n", verb, b.Bench, b.Items, b.Samples, b.Mean)
	}
	fmt.Fprintf(opts.Out, "run %s step %d (weights %q): %d benchmarks from %s\n", run, opts.Step, weights, len(res.Benches), format)
	if res.Skipped != "" {
		fmt.Fprintf(opts.Out, "skipped: %s\n", res.Skipped)
	}
	return nil
}
