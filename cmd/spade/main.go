// Command spade runs SPADE (Self-Play in Adaptive Synthetic Executable Environments) as batch stages over
// a data lake. Each subcommand lives in its own cmd_<name>.go file and registers itself in init().
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/progress"
)

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

var commands []*cli.Command

// reporter is this process's progress reporter (stage.Env.Progress), made by the app's Before from
// --log-format and whether stderr is a terminal.
var reporter *progress.Reporter

// phases counts the named phases of a long command on the progress reporter; next starts the next one
// (shown beside the bar), done ends the task.
type phases struct {
	task *progress.Task
	n    int
}

func startPhases(name string, total int) *phases {
	return &phases{task: reporter.Start(name, int64(total), "phases")}
}

func (p *phases) next(what string) {
	if p.n > 0 {
		p.task.Add(1)
	}
	p.n++
	p.task.Note("%s", what)
}

func (p *phases) done() { p.task.Done() }

// register adds a subcommand; called from each cmd_<name>.go's init.
func register(c *cli.Command) { commands = append(commands, c) }

// usageErr marks an error as the user's input being wrong (exit code 2); usage is the command's usage
// line, printed under the error (filled in by the command's wrapped action when empty).
type usageErr struct {
	err   error
	usage string
}

func (u usageErr) Error() string { return u.err.Error() }
func (u usageErr) Unwrap() error { return u.err }

// usageError returns an error that exits with code 2; the message should say what to do.
func usageError(format string, args ...any) error {
	return usageErr{err: fmt.Errorf(format, args...)}
}

// asUsage marks an existing error as a usage error.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageErr{err: err}
}

func newApp() *cli.App {
	sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	if !hasCommand(commands, "help") {
		commands = append(commands, helpCommand(), completionCommand())
		sort.Slice(commands, func(i, j int) bool { return commands[i].Name < commands[j].Name })
	}
	prepareCommands(commands, nil)
	cli.VersionPrinter = func(c *cli.Context) { printVersion(c.App.Writer) }
	return &cli.App{
		Name:    "spade",
		Usage:   "run SPADE self-play as batch stages over a data lake",
		Version: "(spade --version)",
		// Shell completion: spade completion bash|zsh prints the script (README, "Using it").
		EnableBashCompletion: true,
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			return unknownCommand(c.Args().First(), c.App.Commands, nil)
		},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "lake", Value: "./lake", EnvVars: []string{"SPADE_LAKE"}, Usage: "lake URI: a local directory or s3://bucket/prefix"},
			&cli.StringSliceFlag{Name: "run", EnvVars: []string{"SPADE_RUN"}, Usage: "run name (repeat for commands that compare runs)"},
			&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "logs on stderr: auto (on a terminal: progress bars, warnings and errors with tracebacks as they are; elsewhere: text), text (every log line) or json (every log line, progress as log lines)"},
		},
		Before: func(c *cli.Context) error {
			term := progress.IsTerminal(os.Stderr)
			var h slog.Handler
			switch c.String("log-format") {
			case "auto":
				if term {
					reporter = progress.New(os.Stderr, nil, 0)
					h = progress.NewTermHandler(reporter.Writer(), slog.LevelWarn)
				} else {
					h = slog.NewTextHandler(os.Stderr, nil)
				}
			case "text":
				if term {
					reporter = progress.New(os.Stderr, nil, 0)
					h = slog.NewTextHandler(reporter.Writer(), nil)
				} else {
					h = slog.NewTextHandler(os.Stderr, nil)
				}
			case "json":
				h = slog.NewJSONHandler(os.Stderr, nil)
			default:
				return usageError("--log-format must be auto, text or json, got %q", c.String("log-format"))
			}
			slog.SetDefault(slog.New(h))
			if reporter == nil {
				reporter = progress.New(nil, slog.Default(), 0)
			}
			return nil
		},
		Commands:        commands,
		HideHelpCommand: true,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr{err: err, usage: usageLine(nil)}
		},
		ExitErrHandler: func(*cli.Context, error) {}, // exit codes are decided in main
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args, os.Stderr))
}

// run executes the CLI and maps errors to exit codes: 2 for usage and invalid input, 130 when
// interrupted, 1 for any other failure.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	err := newApp().RunContext(ctx, args)
	if err == nil {
		return exitOK
	}
	var u usageErr
	switch {
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		fmt.Fprintf(stderr, "spade: %v\n", err)
		return exitInterrupted
	case errors.As(err, &u):
		// Two lines: what was wrong, and the usage line of the command (never the whole help).
		fmt.Fprintf(stderr, "spade: %v\n", err)
		usage := u.usage
		if usage == "" {
			usage = usageLine(nil)
		}
		fmt.Fprintln(stderr, usage)
		return exitUsage
	}
	fmt.Fprintf(stderr, "spade: %v\n", err)
	return exitFailure
}

// hasCommand reports whether cmds has a command called name.
func hasCommand(cmds []*cli.Command, name string) bool {
	for _, c := range cmds {
		if c.Name == name {
			return true
		}
	}
	return false
}

// openLake opens the lake named by --lake.
func openLake(c *cli.Context) (*lake.Lake, error) {
	return lake.Open(c.Context, c.String("lake"))
}

// runFlags returns the --run names given; an empty SPADE_RUN counts as none.
func runFlags(c *cli.Context) []string {
	var runs []string
	for _, r := range c.StringSlice("run") {
		if r = strings.TrimSpace(r); r != "" {
			runs = append(runs, r)
		}
	}
	return runs
}

// runName returns the single --run, or a usage error.
func runName(c *cli.Context) (string, error) {
	runs := runFlags(c)
	switch len(runs) {
	case 0:
		return "", usageError("no run named: pass --run NAME or set SPADE_RUN")
	case 1:
		if err := lake.ValidName(runs[0]); err != nil {
			return "", asUsage(fmt.Errorf("--run: %w", err))
		}
		return runs[0], nil
	}
	return "", usageError("this command takes one --run, got %d", len(runs))
}

// openRun opens the lake and reads the run's configuration.
func openRun(c *cli.Context) (*lake.Lake, string, *config.Config, error) {
	run, err := runName(c)
	if err != nil {
		return nil, "", nil, err
	}
	lk, err := openLake(c)
	if err != nil {
		return nil, "", nil, err
	}
	cfg, err := lk.RunConfig(c.Context, run)
	if errors.Is(err, lake.ErrNoRun) {
		return nil, "", nil, asUsage(err)
	}
	if err != nil {
		return nil, "", nil, err
	}
	return lk, run, cfg, nil
}
