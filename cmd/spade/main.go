// Command spade runs SPADE (Self-Play in Adaptive Synthetic Executable Environments) as batch stages over
// a data lake. Each command lives in its own cmd_<name>.go file: newXCommand builds its *cli.Command (usage,
// description, flags) and its Action only parses the flags into an xOptions and calls runX, which does
// the work. newApp lists every top-level command, and a command with subcommands lists its own.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/schemas"
)

// Exit codes, documented in the README.
const (
	exitOK          = 0
	exitFailure     = 1
	exitUsage       = 2
	exitInterrupted = 130
)

// defaultLake is --lake when neither the flag nor SPADE_LAKE is given.
const defaultLake = "./lake"

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

// checkChoice returns nil when value is one of allowed, else the usage error naming the flag, the
// allowed values in their order and the value given: `--format must be table, csv or json, got "xml"`.
func checkChoice[T ~string](flag string, value T, allowed ...T) error {
	if slices.Contains(allowed, value) {
		return nil
	}
	list := string(allowed[len(allowed)-1])
	if len(allowed) > 1 {
		list = schemas.JoinValues(allowed[:len(allowed)-1], ", ") + " or " + list
	}
	return usageError("%s must be %s, got %q", flag, list, value)
}

// asUsage marks an existing error as a usage error.
func asUsage(err error) error {
	if err == nil {
		return nil
	}
	return usageErr{err: err}
}

// newApp builds the CLI: every top-level command, in the order help lists them (by name).
func newApp() *cli.App {
	commands := []*cli.Command{
		newAblateCommand(),
		newBenchCommand(),
		newCompletionCommand(),
		newConfigCommand(),
		newCorpusCommand(),
		newDoctorCommand(),
		newEnvCommand(),
		newEvalCommand(),
		newExportCommand(),
		newGateCommand(),
		newGenerateCommand(),
		newGRPOCommand(),
		newHelpCommand(),
		newInitCommand(),
		newK8sCommand(),
		newLabCommand(),
		newLakeCommand(),
		newMetricsCommand(),
		newPoolCommand(),
		newQueryCommand(),
		newRegretCommand(),
		newReportCommand(),
		newRolloutCommand(),
		newRunCommand(),
		newSampleCommand(),
		newStatusCommand(),
		newSynthCommand(),
		newViewCommand(),
	}
	prepareCommands(commands, nil)
	cli.VersionPrinter = func(c *cli.Context) { printVersion(c.App.Writer) }
	return &cli.App{
		Name:    "spade",
		Usage:   "run SPADE self-play as batch stages over a data lake",
		Version: "(spade --version)",
		// Shell completion: spade completion bash|zsh|fish prints a script that asks `spade __complete`
		// (cmd_completion.go); urfave/cli's own --generate-bash-completion stays for older scripts.
		EnableBashCompletion: true,
		Metadata:             map[string]any{},
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			return unknownCommand(c.Args().First(), c.App.Commands, nil)
		},
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "lake", Value: defaultLake, EnvVars: []string{"SPADE_LAKE"}, Usage: "lake URI: a local directory or s3://bucket/prefix"},
			&cli.StringSliceFlag{Name: "run", EnvVars: []string{"SPADE_RUN"}, Usage: "run name (repeat for commands that compare runs)"},
			&cli.StringFlag{Name: "log-format", Value: "auto", Usage: "logs on stderr: auto (on a terminal: progress bars, warnings and errors with tracebacks as they are; elsewhere: text), text (every log line) or json (every log line, progress as log lines)"},
			// urfave/cli adds --help itself only to an app without a help command of its own, and spade
			// has one (newHelpCommand), so --help and -h are declared here.
			cli.HelpFlag,
		},
		Before: func(c *cli.Context) error {
			term := progress.IsTerminal(os.Stderr)
			var reporter *progress.Reporter
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
			c.App.Metadata[reporterKey] = reporter
			return nil
		},
		Commands:        commands,
		HideHelpCommand: true,
		OnUsageError: func(c *cli.Context, err error, _ bool) error {
			return usageErr{err: flagError(err, "", c.App.Flags), usage: usageLine(nil)}
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
	app := newApp()
	if len(args) > 1 && args[1] == completeCommand {
		complete(ctx, app, args[2:], os.Stdout)
		return exitOK
	}
	err := app.RunContext(ctx, normalizeArgs(app, args))
	if err == nil {
		return exitOK
	}
	var u usageErr
	var pastRecording *llm.ReplayEndError
	switch {
	case errors.As(err, &pastRecording):
		// One line, however many calls of the step met the end of the recording.
		fmt.Fprintf(stderr, "spade: %v\n", pastRecording)
		return exitFailure
	case errors.Is(err, context.Canceled) || ctx.Err() != nil:
		fmt.Fprintf(stderr, "spade: %s\n", interrupted(err))
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

// interrupted says in spade's words what an interrupt stopped: the error's own context (which command,
// step or stage) without Go's "context canceled", ending in "interrupted".
func interrupted(err error) string {
	msg := err.Error()
	for _, tail := range []string{": context canceled", "context canceled"} {
		msg = strings.TrimSuffix(msg, tail)
	}
	msg = strings.TrimSuffix(strings.TrimSpace(msg), ":")
	switch {
	case msg == "":
		return "interrupted"
	case strings.HasSuffix(msg, "interrupted"):
		return msg
	}
	return msg + ": interrupted"
}
