package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
)

// initOptions are the options of `spade init`.
type initOptions struct {
	globalOptions
	// Preset is --preset; PresetSet says it was given (a child run refuses it).
	Preset    string
	PresetSet bool
	// overrideOptions are --config and --set.
	overrideOptions
	// From is --from RUN@STEP; FromSet says it was given (an empty one is refused, not ignored).
	From    string
	FromSet bool
}

// overrideOptions are what init applies on top of a preset or a parent's configuration.
type overrideOptions struct {
	// ConfigFile is --config, a JSON file of keys ("" for none).
	ConfigFile string
	// Sets are the --set key=value overrides, in order.
	Sets []string
}

func newInitCommand() *cli.Command {
	return &cli.Command{
		Name:  "init",
		Usage: "create a run with its configuration (written once to run.json)",
		Description: "Creates the run named by --run from a preset (the authors' launch scripts' values), then a config\n" +
			"file (YAML or JSON: nested maps, dotted keys or both, as `spade config show` writes it), then the --set\n" +
			"overrides, in that order, and validates the result. An existing run is never changed: a changed setting\n" +
			"is a new run.\n\n" +
			"With --from RUN@STEP the run is a child of RUN: it starts from RUN's configuration (then --config and\n" +
			"--set) and RUN's committed partitions at steps <= STEP are copied into it (pool, memory, EMA state,\n" +
			"weights version, used documents, every table), so `spade run --steps STEP+1-...` continues from\n" +
			"there; run.json records the parent and the step.\n\n" +
			"Example: spade --run r1 init --preset qwen3-8b-games --set rollout.group_size=8\n" +
			"         spade --run r1b init --from r1@199 --set regret.band_lo=0.2 --set regret.band_hi=0.4\n" +
			"         spade --run r2 init --config r2.yaml\n\n" +
			"Presets: " + strings.Join(config.PresetNames(), ", ") + "\n\n" +
			"Keys (the same list as `spade config keys`):\n" + keysText(),
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "preset", Value: "qwen3-30b-a3b-games", Usage: "preset name"},
			&cli.StringFlag{Name: "config", Usage: "YAML (.yaml, .yml) or JSON (.json) file of keys: nested maps, dotted keys or both"},
			&cli.GenericFlag{Name: "set", Value: &overrides{}, Usage: "key=value override (repeatable; a value may hold commas)"},
			&cli.StringFlag{Name: "from", Usage: "RUN@STEP: a child run starting from RUN's configuration and its lake state up to STEP "},
		},
		Action: func(c *cli.Context) error {
			return runInit(c.Context, initOptions{globalOptions: globalsFrom(c), Preset: c.String("preset"),
				PresetSet: c.IsSet("preset"), From: c.String("from"), FromSet: c.IsSet("from"),
				overrideOptions: overrideOptions{ConfigFile: c.String("config"), Sets: c.Generic("set").(*overrides).list}})
		},
	}
}

// runInit creates the run named by --run from opts.Preset, or with opts.From as a child of another run.
func runInit(ctx context.Context, opts initOptions) error {
	run, err := opts.runName()
	if err != nil {
		return err
	}
	if opts.FromSet {
		return runInitFrom(ctx, opts, run)
	}
	cfg, err := config.Preset(opts.Preset)
	if err != nil {
		return asUsage(err)
	}
	if err := applyOverrides(cfg, opts.overrideOptions); err != nil {
		return err
	}
	lk, err := opts.openLake(ctx)
	if err != nil {
		return err
	}
	if err := createRun(ctx, lk, run, cfg); err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "created run %s in %s (preset %s)\n", run, lk.URI(), cfg.Preset)
	return nil
}

// overrides collects the --set flags one per occurrence: unlike a string slice flag it does not split a
// value at commas, so `--set outcome.exclude_ended_by=env_error,timeout` stays one override.
type overrides struct{ list []string }

// Set implements flag.Value.
func (o *overrides) Set(value string) error {
	o.list = append(o.list, value)
	return nil
}

// String implements flag.Value.
func (o *overrides) String() string { return strings.Join(o.list, " ") }

// createRun writes run's configuration (lake.CreateRun); a run that exists already is a usage error.
func createRun(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config) error {
	err := lk.CreateRun(ctx, run, cfg)
	if errors.Is(err, lake.ErrRunExists) {
		return asUsage(err)
	}
	return err
}
