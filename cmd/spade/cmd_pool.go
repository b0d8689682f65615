package main

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/gate"
	"github.com/spadekit/spade/stages/pool"
	"github.com/spadekit/spade/stages/stage"
)

func init() {
	draw := stageCommand{
		name:  pool.Name,
		usage: "write a refresh step's envs from the imported pool sample.pool (fixed-environment GRPO)",
		description: "In a run with sample.pool set, takes sample.envs_per_step programs of the pool at each refresh step\n" +
			"(a seeded order fixed for the run, rotating through the whole pool) and writes them as the step's envs;\n" +
			"sample, generate and gate are not due in such a run. `spade run` runs it in their place.\n\n" +
			"Example: spade --run fixed1 pool draw --step 0",
		stageFor: func(*cli.Context, *stage.Env) (stage.Stage, error) { return pool.Stage{}, nil },
	}.command()
	draw.Name = "draw"
	register(&cli.Command{
		Name:  "pool",
		Usage: "static pools of env programs for fixed-environment GRPO (sample.pool)",
		Subcommands: []*cli.Command{{
			Name:      "import",
			Usage:     "check env programs in the sandbox and store those that pass as a named pool",
			ArgsUsage: "DIR|FILE...",
			Description: "Inputs: Python files (FILE.hint next to one is its hint; the id is the file name), directories of\n" +
				"them, or Parquet/JSONL files with a code column and optional hint, skill and id. Every input is read\n" +
				"first: a bad one (unreadable, wrong format, no code, an unknown skill) is a one-line error, exit 2, and\n" +
				"nothing is imported. Each new program then runs through the gate's checks in the sandbox: --checks\n" +
				"official (the default) is the authors' gate, as gate.checks in the presets; strict adds the reset,\n" +
				"smoke, trivial and hint-leak probes. One that fails is listed and left out, the others are stored\n" +
				"(exit 2 when none passes). Programs are\n" +
				"deduplicated by id, within the input and against the pool already in the lake. A run uses the pool\n" +
				"with --set sample.pool=NAME.\n\n" +
				"Example: spade pool import --name fixed testdata/envs",
			Flags: append([]cli.Flag{
				&cli.StringFlag{Name: "name", Required: true, Usage: "pool name (runs refer to it as sample.pool)"},
				&cli.StringFlag{Name: "setting", Value: string(schemas.SettingGames), Usage: "games or tools: which checks the programs must pass"},
				&cli.StringFlag{Name: "checks", Value: string(config.GateOfficial), Usage: "the gate's check set (gate.checks): official (the authors' gate) or strict"},
			}, sandboxFlags()...),
			Action: poolImport,
		}, draw},
	})
}

// poolImport checks and stores the programs named on the command line.
func poolImport(c *cli.Context) error {
	args, err := positionalArgs(c)
	if err != nil {
		return err
	}
	checks := config.GateChecks(c.String("checks"))
	if !slices.Contains(config.GateChecksValues(), checks) {
		return usageError("--checks must be official or strict, got %q", checks)
	}
	lk, err := openLake(c)
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
			if sbx, err = newImportSandbox(c); err != nil {
				return pool.Verdict{Err: err}
			}
		}
		v := gate.Check(ctx, sbx, p.Code, gate.CheckOptions{Setting: setting, Hint: p.Hint, Checks: checks})
		return pool.Verdict{Accepted: v.Accepted, Class: v.Class, Reason: v.FailureText(), Err: v.Err}
	}
	name := c.String("name")
	res, err := pool.Import(c.Context, lk, name, schemas.Setting(c.String("setting")), args, check)
	var inputErr *pool.InputError
	if errors.As(err, &inputErr) {
		return asUsage(fmt.Errorf("pool import: %w; nothing was imported", err))
	}
	for _, r := range res.Rejected {
		fmt.Fprintf(c.App.Writer, "rejected %s (%s): %s\n", r.ID, r.Source, r.Reason)
	}
	if errors.Is(err, pool.ErrNothingAccepted) {
		return asUsage(fmt.Errorf("pool import: %w (%d rejected); nothing was imported", err, len(res.Rejected)))
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.App.Writer, "pool %s: %d imported, %d rejected by the gate, %d skipped as duplicates, %d programs in total\n",
		name, res.Imported, len(res.Rejected), res.Skipped, res.Total)
	return nil
}

// newImportSandbox starts the sandbox pool of an import: the run defaults' limits
// (stage.SandboxOptions), the interpreter and isolation from the flags.
func newImportSandbox(c *cli.Context) (*sandbox.Pool, error) {
	opts := stage.SandboxOptions(config.Default())
	opts.Python, opts.AllowUnsafe = c.String("python"), c.Bool("unsafe-no-isolation")
	opts.Isolation = sandbox.Isolation(c.String("isolation"))
	switch opts.Isolation {
	case sandbox.IsolationAuto, sandbox.IsolationBwrap, sandbox.IsolationNamespaces:
	default:
		return nil, usageError("--isolation must be auto, bwrap or namespaces, got %q", opts.Isolation)
	}
	sbx, err := sandbox.NewPool(c.Context, opts)
	if err != nil {
		return nil, err
	}
	if sbx.Isolation() == sandbox.IsolationNone {
		fmt.Fprintln(c.App.ErrWriter, "WARNING: no isolation works here; running generated code UNCONFINED (--unsafe-no-isolation)")
	}
	return sbx, nil
}
