package main

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/gate"
	"github.com/spadekit/spade/stages/pool"
	"github.com/spadekit/spade/stages/stage"
)

func newPoolCommand() *cli.Command {
	return &cli.Command{
		Name:        "pool",
		Usage:       "static pools of env programs for fixed-environment GRPO (sample.pool)",
		Subcommands: []*cli.Command{newPoolImportCommand(), newPoolDrawCommand()},
	}
}

// poolImportOptions are the options of `spade pool import`.
type poolImportOptions struct {
	globalOptions
	sandboxOptions
	// Name is --name, the pool's name (sample.pool refers to it).
	Name string
	// Setting is --setting: the checks every program must pass are those of this setting.
	Setting schemas.Setting
	// Checks is --checks, the gate's check set (gate.checks).
	Checks config.GateChecks
	// Shape is --shape, what the official checks ask of a program's form (gate.shape).
	Shape config.GateShape
	// Format is --format: files, gpt55 or rlve.
	Format schemas.PoolFormat
	// AllowImports is --allow-import: modules the pool's static check allows beyond the default list.
	AllowImports []string
	// RLVEEnvs is --rlve-envs: which RLVE environments an rlve import wraps.
	RLVEEnvs string
}

func newPoolImportCommand() *cli.Command {
	return &cli.Command{
		Name:      "import",
		Usage:     "check env programs in the sandbox and store those that pass as a named pool",
		ArgsUsage: "DIR|FILE...",
		Description: `Inputs (--format files, the default): Python files (FILE.hint next to one is its hint; the id is the
file name), directories of them, or Parquet/JSONL files with a code column and optional hint, skill
and id. --format gpt55 takes the directory of the authors' static GPT-5.5 pool (games/game_*.py,
manifest.jsonl, validation_manifest.jsonl, validation_summary.json, checksums.sha256; every checksum is
verified first); --format rlve takes a checkout of RLVE's Gym package and wraps each environment of
--rlve-envs as a single-turn env program whose level the run keeps in rlve_levels. Every input is read
first: a bad one (unreadable, wrong format, no code, an unknown skill, a wrong checksum) is a one-line
error, exit 2, and nothing is imported. Each new program then runs through the gate's checks in the sandbox: --checks
official (the default) is the authors' gate, as gate.checks in the presets; strict adds the reset,
smoke, trivial and hint-leak probes. One that fails is listed and left out, the others are stored
(exit 2 when none passes). Programs are
deduplicated by id, within the input and against the pool already in the lake. A run uses the pool
with --set sample.pool=NAME.

The static check's import allowlist is the pool's: the default list (an rlve pool adds
networkx, array and queue, which RLVE's environments import) plus every --allow-import; it is recorded
on the pool's rows (pools.allowed_imports).

Examples: spade pool import --name fixed testdata/envs
          spade pool import --format gpt55 /scratch/spare-gpt55-static-corpus
          spade pool import --format rlve --rlve-envs Sorting,Multiplication ~/RLVE/Gym`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "name", Usage: "pool name (runs refer to it as sample.pool); default: the format's name for gpt55 and rlve, required for files"},
			&cli.StringFlag{Name: "format", Value: string(schemas.PoolFiles), Usage: "the inputs' layout: files, gpt55 (the authors' static pool directory) or rlve (a checkout of RLVE's Gym package)"},
			&cli.StringSliceFlag{Name: "allow-import", Usage: "a module the pool's static check allows beyond the default list (repeatable)"},
			&cli.StringFlag{Name: "rlve-envs", Value: "official16", Usage: "with --format rlve: official16 (the authors' 16), all, or a comma list of RLVE identifiers"},
			&cli.StringFlag{Name: "setting", Value: string(schemas.SettingGames), Usage: "games or tools: which checks the programs must pass"},
			&cli.StringFlag{Name: "checks", Value: string(config.GateOfficial), Usage: "the gate's check set (gate.checks): official (the authors' gate) or strict"},
			&cli.StringFlag{Name: "shape", Value: string(config.Default().Gate.Shape), Usage: "what the official checks ask of a program's form (gate.shape): authors (refuse what the authors' loader refuses: no ...Env class, reset giving (observation, None), the 4-tuple step) or lenient"},
		}, sandboxFlags()...),
		Action: func(c *cli.Context) error {
			args, err := positionalArgs(c)
			if err != nil {
				return err
			}
			return runPoolImport(c.Context, poolImportOptions{globalOptions: globalsFrom(c), sandboxOptions: sandboxOptionsFrom(c),
				Name: c.String("name"), Setting: schemas.Setting(c.String("setting")), Checks: config.GateChecks(c.String("checks")), Shape: config.GateShape(c.String("shape")),
				Format: schemas.PoolFormat(c.String("format")), AllowImports: c.StringSlice("allow-import"), RLVEEnvs: c.String("rlve-envs")}, args)
		},
	}
}

// runPoolImport checks the programs of args (files and directories) in the sandbox and stores those
// that pass as the pool opts.Name.
func runPoolImport(ctx context.Context, opts poolImportOptions, args []string) error {
	if err := checkChoice("--checks", opts.Checks, config.GateChecksValues()...); err != nil {
		return err
	}
	if err := checkChoice("--shape", opts.Shape, config.GateShapeValues()...); err != nil {
		return err
	}
	if err := checkChoice("--format", opts.Format, schemas.PoolFormatValues()...); err != nil {
		return err
	}
	if opts.Name == "" {
		if opts.Format == schemas.PoolFiles {
			return usageError("pool import: --name is required with --format files (runs refer to the pool as sample.pool)")
		}
		opts.Name = string(opts.Format)
	}
	for _, m := range opts.AllowImports {
		if !moduleName.MatchString(m) {
			return usageError("pool import: --allow-import %q is not a top-level module name", m)
		}
	}
	lk, err := opts.openLake(ctx)
	if err != nil {
		return err
	}
	var sbx *sandbox.Pool
	defer func() {
		if sbx != nil {
			sbx.Close()
		}
	}()
	check := func(ctx context.Context, p pool.Program, setting schemas.Setting) pool.Verdict {
		if sbx == nil {
			if sbx, err = newImportSandbox(ctx, opts.globalOptions, opts.sandboxOptions); err != nil {
				return pool.Verdict{Err: err}
			}
		}
		rules := sandbox.DefaultStaticRules()
		rules.AllowedImports = p.AllowedImports
		v := gate.Check(ctx, sbx, p.Code, gate.CheckOptions{Setting: setting, Hint: p.Hint, Checks: opts.Checks, Rules: &rules,
			LoadTimeout: time.Duration(config.Default().Gate.LoadTimeoutSeconds) * time.Second, Shape: opts.Shape})
		return pool.Verdict{Accepted: v.Accepted, Class: v.Class, Contract: v.Contract, Reason: v.FailureText(), Refusal: v.RefusalReason(), Err: v.Err}
	}
	spec := pool.Spec{Name: opts.Name, Setting: opts.Setting, Format: opts.Format, Inputs: args, RLVEEnvs: opts.RLVEEnvs,
		AllowedImports: pool.AllowedImports(opts.Format, opts.AllowImports)}
	res, err := pool.Import(ctx, lk, spec, check)
	var inputErr *pool.InputError
	if errors.As(err, &inputErr) {
		return asUsage(fmt.Errorf("pool import: %w; nothing was imported", err))
	}
	for _, r := range res.Rejected {
		fmt.Fprintf(opts.Out, "rejected %s (%s): %s\n", r.ID, r.Source, r.Reason)
	}
	if summary := res.RefusalSummary(); summary != "" {
		fmt.Fprintln(opts.Out, summary)
	}
	if errors.Is(err, pool.ErrNothingAccepted) {
		return asUsage(fmt.Errorf("pool import: %w (%d rejected); nothing was imported", err, len(res.Rejected)))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "pool %s: %d imported, %d rejected by the gate, %d skipped as duplicates, %d programs in total\n",
		opts.Name, res.Imported, len(res.Rejected), res.Skipped, res.Total)
	return nil
}

// moduleName is a top-level Python module name (--allow-import).
var moduleName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// newImportSandbox starts the sandbox pool of an import: the run defaults' limits
// (stage.SandboxOptions), the interpreter and isolation from the flags.
func newImportSandbox(ctx context.Context, g globalOptions, so sandboxOptions) (*sandbox.Pool, error) {
	opts := stage.SandboxOptions(config.Default())
	opts.Python, opts.AllowUnsafe, opts.Isolation = so.Python, so.UnsafeNoIsolation, so.Isolation
	return startSandbox(ctx, g, opts)
}

func newPoolDrawCommand() *cli.Command {
	return &cli.Command{
		Name:  "draw",
		Usage: "write a refresh step's envs from the imported pool sample.pool (fixed-environment GRPO)",
		Description: "In a run with sample.pool set, takes sample.envs_per_step programs of the pool at each refresh step\n" +
			"(a seeded order fixed for the run, rotating through the whole pool) and writes them as the step's envs;\n" +
			"sample, generate and gate are not due in such a run. `spade run` runs it in their place. For an RLVE pool it\n" +
			"also writes rlve_levels: each environment's difficulty window with the previous pool's plays folded in,\n" +
			"and the level and shared problem seed drawn for the step.\n\n" +
			"Example: spade --run fixed1 pool draw --step 0",
		Flags: stageFlags(),
		Action: func(c *cli.Context) error {
			return runPoolDraw(c.Context, stageOptionsFrom(c))
		},
	}
}

// runPoolDraw runs the pool stage at opts.Step.
func runPoolDraw(ctx context.Context, opts stageOptions) error {
	return runStage(ctx, opts, func(*stage.Env) (stage.Stage, error) { return pool.Stage{}, nil })
}
