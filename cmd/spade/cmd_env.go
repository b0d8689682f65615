package main

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/safetext"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/gate"
)

func newEnvCommand() *cli.Command {
	return &cli.Command{
		Name:        "env",
		Usage:       "check an environment program, or play a stored env in the terminal",
		Subcommands: []*cli.Command{newEnvCheckCommand(), newEnvPlayCommand()},
	}
}

// envCheckOptions are the options of `spade env check`.
type envCheckOptions struct {
	globalOptions
	sandboxOptions
	// Hint is --hint; HintSet says it was given (else FILE.hint beside the program is read).
	Hint    string
	HintSet bool
	// Setting is --setting ("" for the program's '# setting:' line, else games).
	Setting schemas.Setting
	// NoStatic is --no-static: skip the static check.
	NoStatic bool
}

func newEnvCheckCommand() *cli.Command {
	return &cli.Command{
		Name:      "check",
		Usage:     "run every gate check on a local environment program and print each verdict",
		ArgsUsage: "FILE.py",
		Description: `Runs the gate's checks in order on FILE.py in the sandbox and prints each check with its verdict
and time. Exit 0 when the program is accepted, 1 when it is rejected. The hint defaults to the
sibling FILE.hint when it exists; the setting to a '# setting: tools' header line, else games.

Example: spade env check testdata/envs/logic_mastermind.py
         spade env check my_env.py --hint 'try the corners first' --setting games`,
		Flags: append(sandboxFlags(),
			&cli.StringFlag{Name: "hint", Usage: "the privileged hint (default: FILE.hint beside the program)"},
			&cli.StringFlag{Name: "setting", Usage: "games or tools (default: the program's '# setting:' line, else games)"},
			&cli.BoolFlag{Name: "no-static", Usage: "skip the static check (the sandbox alone contains the program)"},
		),
		Action: func(c *cli.Context) error {
			args, err := positionalArgs(c)
			if err != nil {
				return err
			}
			return runEnvCheck(c.Context, envCheckOptions{globalOptions: globalsFrom(c), sandboxOptions: sandboxOptionsFrom(c),
				Hint: c.String("hint"), HintSet: c.IsSet("hint"), Setting: schemas.Setting(c.String("setting")),
				NoStatic: c.Bool("no-static")}, args)
		},
	}
}

// envPlayOptions are the options of `spade env play`.
type envPlayOptions struct {
	globalOptions
	sandboxOptions
	// ShowHint is --hint: print the privileged hint before playing.
	ShowHint bool
	// Seed is --seed, the seed of the first episode.
	Seed int64
	// Step is --step, the pool step to look in (-1: every step).
	Step int64
}

func newEnvPlayCommand() *cli.Command {
	return &cli.Command{
		Name:      "play",
		Usage:     "play a stored env in the terminal",
		ArgsUsage: "ENV_ID",
		Description: `Loads ENV_ID from the run's envs table and plays it: the observation is shown, you type an
action (a tool call as JSON in the tools setting), and the reward and done flag are shown; at the end of
an episode, its return as the run scores it (rollout.return). ENV_ID may be the start of an id, with or
without its "env-", when only one env has it. An empty line sends nothing.
Lines starting with ':' are commands, never sent to the env: :help, :reset (a new episode with the
next seed), :hint, :obs (the last observation again), :quit; '::x' sends the action ':x'. After the
episode ends only :reset and :quit (and :help, :hint, :obs) are accepted. On a terminal the line
can be edited (arrows, Home/End, Ctrl-A/E/W/U) with this session's history (up/down, Ctrl-R);
Ctrl-C leaves at once (exit 130), Ctrl-D like :quit.

Example: spade --run r1 env play env-19264bca9c6c346c --hint
         spade --run r1 env play 19264b`,
		Flags: append(sandboxFlags(),
			&cli.BoolFlag{Name: "hint", Usage: "show the privileged hint before playing"},
			&cli.Int64Flag{Name: "seed", Usage: "seed of the first episode"},
			&cli.Int64Flag{Name: "step", Value: -1, Usage: "pool step to look in (default: every step)"},
		),
		Action: func(c *cli.Context) error {
			args, err := positionalArgs(c)
			if err != nil {
				return err
			}
			return runEnvPlay(c.Context, envPlayOptions{globalOptions: globalsFrom(c), sandboxOptions: sandboxOptionsFrom(c),
				ShowHint: c.Bool("hint"), Seed: c.Int64("seed"), Step: c.Int64("step")}, args)
		},
	}
}

// sandboxOptions are the options of the commands that run generated code themselves (sandboxFlags).
type sandboxOptions struct {
	// Python is --python, the sandbox's interpreter ("" for sandbox.DefaultPython).
	Python string
	// Isolation is --isolation: auto, bwrap or namespaces.
	Isolation sandbox.Isolation
	// UnsafeNoIsolation is --unsafe-no-isolation: run generated code unconfined when no sandbox works.
	UnsafeNoIsolation bool
}

// sandboxFlags are the flags of commands that run generated code themselves.
func sandboxFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "python", EnvVars: []string{sandbox.PythonEnv}, Usage: "Python interpreter for the sandbox (default python3 on PATH, or /usr/bin/python3 when only that has numpy)"},
		&cli.StringFlag{Name: "isolation", Value: string(sandbox.IsolationAuto), Usage: "auto, bwrap or namespaces"},
		&cli.BoolFlag{Name: "unsafe-no-isolation", Usage: "run generated code WITHOUT isolation when no sandbox works (dangerous)"},
	}
}

// sandboxOptionsFrom parses sandboxFlags.
func sandboxOptionsFrom(c *cli.Context) sandboxOptions {
	return sandboxOptions{Python: c.String("python"), Isolation: sandbox.Isolation(c.String("isolation")),
		UnsafeNoIsolation: c.Bool("unsafe-no-isolation")}
}

// newSandbox starts the two-worker sandbox pool of env check and env play from so; envs are made with
// max_turns (the authors' Cls(max_turns=N)).
func newSandbox(ctx context.Context, g globalOptions, so sandboxOptions, maxTurns int) (*sandbox.Pool, error) {
	return startSandbox(ctx, g, sandbox.Options{Python: so.Python, Isolation: so.Isolation, AllowUnsafe: so.UnsafeNoIsolation, Workers: 2,
		MaxTurns: maxTurns})
}

// startSandbox starts a sandbox pool: an --isolation other than auto, bwrap or namespaces is a usage
// error, and running unconfined (--unsafe-no-isolation where nothing works) is warned about on stderr.
func startSandbox(ctx context.Context, g globalOptions, opts sandbox.Options) (*sandbox.Pool, error) {
	if err := checkChoice("--isolation", opts.Isolation, sandbox.IsolationAuto, sandbox.IsolationBwrap, sandbox.IsolationNamespaces); err != nil {
		return nil, err
	}
	pool, err := sandbox.NewPool(ctx, opts)
	if err != nil {
		return nil, err
	}
	if pool.Isolation() == sandbox.IsolationNone {
		fmt.Fprintln(g.ErrOut, "WARNING: no isolation works here; running generated code UNCONFINED (--unsafe-no-isolation)")
	}
	return pool, nil
}

// positionalArgs returns the positional arguments and applies flags written after them
// (`spade env check FILE.py --hint TEXT`), which the CLI library would otherwise take as
// arguments.
func positionalArgs(c *cli.Context) ([]string, error) {
	args := c.Args().Slice()
	var positional []string
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(positional, args[i+1:]...), nil
		}
		if !strings.HasPrefix(arg, "-") || arg == "-" {
			positional = append(positional, arg)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		var flag cli.Flag
		for _, f := range c.Command.Flags {
			for _, n := range f.Names() {
				if n == name {
					flag = f
				}
			}
		}
		if flag == nil {
			return nil, usageError("unknown flag %s", arg)
		}
		if _, isBool := flag.(*cli.BoolFlag); isBool && !hasValue {
			value = "true"
		} else if !hasValue {
			if i+1 >= len(args) {
				return nil, usageError("flag %s needs a value", arg)
			}
			i++
			value = args[i]
		}
		if err := c.Set(name, value); err != nil {
			return nil, asUsage(fmt.Errorf("flag %s: %w", arg, err))
		}
	}
	return positional, nil
}

// runEnvCheck runs the gate's checks on the program args[0] and prints each verdict; a rejected program
// is an error (exit 1).
func runEnvCheck(ctx context.Context, opts envCheckOptions, args []string) error {
	if len(args) != 1 {
		return usageError("env check takes one FILE.py, got %d arguments", len(args))
	}
	path := args[0]
	code, err := os.ReadFile(path)
	if err != nil {
		return asUsage(err)
	}
	hint := opts.Hint
	if !opts.HintSet {
		if data, err := os.ReadFile(strings.TrimSuffix(path, ".py") + ".hint"); err == nil {
			hint = strings.TrimSpace(string(data))
		}
	}
	setting := opts.Setting
	if setting == "" {
		setting = schemas.SettingGames
		if strings.Contains(string(code), "\n# setting: tools") || strings.HasPrefix(string(code), "# setting: tools") {
			setting = schemas.SettingTools
		}
	}
	if !setting.Valid() {
		return usageError("--setting must be one of %s, got %q", schemas.JoinValues(schemas.SettingValues(), ", "), setting)
	}
	pool, err := newSandbox(ctx, opts.globalOptions, opts.sandboxOptions, config.Default().Rollout.MaxTurns)
	if err != nil {
		return err
	}
	defer pool.Close()
	out := opts.Out
	fmt.Fprintf(out, "%s (%s setting; isolation %s; python %s)\n", path, setting, pool.Isolation(), pool.Python().Executable)
	start := time.Now()
	v := gate.Check(ctx, pool, string(code), gate.CheckOptions{Setting: setting, Hint: hint, NoStatic: opts.NoStatic})
	if v.Err != nil {
		return v.Err
	}
	for _, r := range v.Results {
		verdict := "pass"
		switch {
		case r.Skipped:
			verdict = "skip"
		case !r.Passed:
			verdict = "FAIL"
		}
		fmt.Fprintf(out, "  %-4s %-17s %8.1f ms", verdict, r.Check, float64(r.Duration.Microseconds())/1000)
		if r.Error != "" {
			fmt.Fprintf(out, "  %s", strings.ReplaceAll(safetext.Terminal(r.Error), "\n", "\n                                     "))
		}
		fmt.Fprintln(out)
	}
	if !v.Accepted {
		fmt.Fprintf(out, "rejected (%.1fs)\n", time.Since(start).Seconds())
		return fmt.Errorf("env check: %s is rejected: %s", path, v.FailureText())
	}
	contract := ""
	if v.Contract != "" {
		contract = fmt.Sprintf(", %s contract", v.Contract)
	}
	fmt.Fprintf(out, "accepted: class %s%s (%.1fs)\n", v.Class, contract, time.Since(start).Seconds())
	return nil
}

// runEnvPlay plays the stored env args[0] of the run in the terminal until :quit, the end of input or
// an interrupt.
func runEnvPlay(ctx context.Context, opts envPlayOptions, args []string) error {
	if len(args) != 1 {
		return usageError("env play takes one ENV_ID, got %d arguments", len(args))
	}
	envID := args[0]
	lk, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	steps, err := lk.Steps(ctx, run, schemas.EnvsSpec.Name)
	if err != nil {
		return err
	}
	// The env is named by its id or by the start of it ("env-" may be left out), as long as one env has it.
	var found *schemas.EnvRow
	var matches []string
	for _, step := range steps {
		if opts.Step >= 0 && opts.Step != step {
			continue
		}
		rows, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.EnvsSpec.Name, Step: step})
		if err != nil {
			return err
		}
		for i := range rows {
			id := rows[i].EnvID
			switch {
			case id == envID:
				found, matches = &rows[i], nil
			case found != nil && found.EnvID == envID:
			case strings.HasPrefix(id, envID) || strings.HasPrefix(strings.TrimPrefix(id, "env-"), envID):
				if !slices.Contains(matches, id) {
					found, matches = &rows[i], append(matches, id)
				}
			}
		}
	}
	list := opts.command("--run", run, "query", "select env_id, skill from envs")
	switch {
	case found == nil:
		return usageError("no env %q in the envs table of run %s (list them: %s)", envID, run, list)
	case len(matches) > 1:
		return usageError("%q names %d envs of run %s (%s): give more of the id (list them: %s)", envID, len(matches), run, strings.Join(matches[:min(len(matches), 4)], ", "), list)
	}
	pool, err := newSandbox(ctx, opts.globalOptions, opts.sandboxOptions, cfg.Rollout.MaxTurns)
	if err != nil {
		return err
	}
	defer pool.Close()
	prog, err := pool.Load(ctx, found.Code)
	if err != nil {
		return err
	}
	defer prog.Close()
	out := opts.Out
	fmt.Fprintf(out, "env %s (%s, %s, class %s); type an action, or :help for the commands\n", found.EnvID, found.Skill, found.Setting, prog.Class)
	if opts.ShowHint {
		fmt.Fprintf(out, "hint: %s\n", safetext.Terminal(found.Hint))
	}
	in := newLineReader(ctx, opts.In, out)
	defer in.Close()
	return (&player{prog: prog, setting: found.Setting, hint: found.Hint, seed: opts.Seed, returnKind: cfg.Rollout.Return, in: in, out: out}).play(ctx)
}
