package main

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/nearest"
)

// Usage errors and help (README, "Exit codes"): every usage error exits 2 with two lines, what was wrong
// and the command's usage line, never the whole help; `spade help CMD` and `spade CMD --help` print one
// command's help; an unknown command is a usage error naming the closest commands.

// usageLine returns the one-line synopsis of the command at path (its names from the app down): its
// required flags, "[options]" and its arguments, or the app's own synopsis for an empty path.
func usageLine(path []*cli.Command) string {
	if len(path) == 0 {
		return "usage: spade [--lake URI] [--run NAME] COMMAND [options]  (spade help lists the commands)"
	}
	names := []string{"spade", "[global options]"}
	for _, c := range path {
		names = append(names, c.Name)
	}
	cmd := path[len(path)-1]
	if isGroup(cmd) && len(cmd.Flags) == 0 { // a command with flags runs itself too (spade eval)
		return fmt.Sprintf("usage: %s COMMAND [options]  (spade help %s lists them)", strings.Join(names, " "), cmd.Name)
	}
	for _, name := range requiredFlags(cmd) {
		names = append(names, "--"+name+" "+strings.ToUpper(strings.ReplaceAll(name, "-", "_")))
	}
	names = append(names, "[options]")
	if cmd.ArgsUsage != "" {
		names = append(names, cmd.ArgsUsage)
	}
	return fmt.Sprintf("usage: %s  (spade help %s for more)", strings.Join(names, " "), pathName(path))
}

// isGroup reports whether cmd has subcommands of its own (not counting urfave/cli's help).
func isGroup(cmd *cli.Command) bool {
	for _, s := range cmd.Subcommands {
		if s.Name != "help" {
			return true
		}
	}
	return false
}

// pathName is the command path without the program name ("corpus import").
func pathName(path []*cli.Command) string {
	names := make([]string, len(path))
	for i, c := range path {
		names[i] = c.Name
	}
	return strings.Join(names, " ")
}

// required records the flags a command must be given, checked by the command's action rather than by
// urfave/cli (which would print the whole help before the error).
var required = map[*cli.Command][]string{}

func requiredFlags(cmd *cli.Command) []string { return required[cmd] }

// prepareCommands makes every command (recursively) report usage errors as usageErr with its usage
// line: flag parse errors through OnUsageError, missing required flags and errors its action marks as
// usage errors through a wrapped Action.
func prepareCommands(cmds []*cli.Command, parents []*cli.Command) {
	for _, cmd := range cmds {
		path := append(append([]*cli.Command{}, parents...), cmd)
		cmd.HideHelpCommand = true
		if _, done := required[cmd]; !done {
			var names []string
			for _, f := range cmd.Flags {
				if rf, ok := f.(cli.RequiredFlag); ok && rf.IsRequired() {
					names = append(names, f.Names()[0])
					setNotRequired(f)
				}
			}
			required[cmd] = names
			cmd.OnUsageError = func(c *cli.Context, err error, _ bool) error {
				return usageErr{err: flagError(err, pathName(path), append(append([]cli.Flag{}, cmd.Flags...), c.App.Flags...)), usage: usageLine(path)}
			}
			if action := cmd.Action; action != nil {
				cmd.Action = func(c *cli.Context) error {
					for _, name := range required[cmd] {
						if !c.IsSet(name) {
							return usageErr{err: fmt.Errorf("%s: --%s is required", pathName(path), name), usage: usageLine(path)}
						}
					}
					err := action(c)
					if u, ok := err.(usageErr); ok && u.usage == "" {
						u.usage = usageLine(path)
						return u
					}
					return err
				}
			} else if isGroup(cmd) {
				// A group without a subcommand: `spade corpus` or `spade corpus bogus`.
				cmd.Action = func(c *cli.Context) error {
					if c.NArg() == 0 {
						return cli.ShowSubcommandHelp(c)
					}
					return unknownCommand(c.Args().First(), cmd.Subcommands, path)
				}
			}
		}
		prepareCommands(cmd.Subcommands, path)
	}
}

// setNotRequired clears Required on the flag types spade uses.
func setNotRequired(f cli.Flag) {
	switch f := f.(type) {
	case *cli.StringFlag:
		f.Required = false
	case *cli.Int64Flag:
		f.Required = false
	case *cli.IntFlag:
		f.Required = false
	case *cli.StringSliceFlag:
		f.Required = false
	case *cli.BoolFlag:
		f.Required = false
	case *cli.Uint64Flag:
		f.Required = false
	case *cli.Float64Flag:
		f.Required = false
	}
}

// unknownCommand is the usage error for a command name that does not exist, naming the closest ones.
func unknownCommand(name string, cmds []*cli.Command, parents []*cli.Command) error {
	msg := fmt.Sprintf("unknown command %q", name)
	if len(parents) > 0 {
		msg = fmt.Sprintf("%s: unknown command %q", pathName(parents), name)
	}
	if s := suggest(name, cmds); len(s) > 0 {
		msg += fmt.Sprintf("; did you mean %s?", strings.Join(s, " or "))
	}
	return usageErr{err: fmt.Errorf("%s", msg), usage: usageLine(parents)}
}

// suggest returns the visible commands closest to name: those it is a prefix of or that are a prefix of
// it, else those within an edit distance of about a third of its length (at least 1, at most 3).
func suggest(name string, cmds []*cli.Command) []string {
	var prefix, near []nearest.Match
	limit := min(max(1, (len(name)+2)/3), 3)
	for _, c := range cmds {
		if c.Hidden {
			continue
		}
		for _, n := range c.Names() {
			switch d := nearest.Distance(name, n); {
			case len(name) >= 2 && (strings.HasPrefix(n, name) || strings.HasPrefix(name, n)):
				prefix = append(prefix, nearest.Match{Name: c.Name, Dist: d})
			case d <= limit:
				near = append(near, nearest.Match{Name: c.Name, Dist: d})
			default:
				continue
			}
			break
		}
	}
	pick := prefix
	if len(pick) == 0 {
		pick = near
	}
	out := nearest.Closest(pick, 3)
	for i, n := range out {
		out[i] = fmt.Sprintf("%q", n)
	}
	return out
}

// newHelpCommand is `spade help [COMMAND [SUBCOMMAND]]`: the app's help, or one command's. Its work
// is urfave/cli's help itself, so its Action stays on the CLI context.
func newHelpCommand() *cli.Command {
	return &cli.Command{
		Name:      "help",
		Usage:     "show the commands, or one command's help (also: spade COMMAND --help)",
		ArgsUsage: "[COMMAND [SUBCOMMAND]]",
		Action: func(c *cli.Context) error {
			if c.NArg() == 0 {
				return cli.ShowAppHelp(c)
			}
			cmds, cmdPath := c.App.Commands, []*cli.Command(nil)
			for _, name := range c.Args().Slice() {
				found := false
				for _, x := range cmds {
					if x.HasName(name) && x.Name != "help" {
						cmdPath, cmds, found = append(cmdPath, x), x.Subcommands, true
						break
					}
				}
				if !found {
					return unknownCommand(name, cmds, cmdPath)
				}
			}
			// The same help as `spade CMD --help`, which urfave/cli lays out (subcommands included).
			return c.App.RunContext(c.Context, append(append([]string{c.App.Name}, c.Args().Slice()...), "--help"))
		},
	}
}

// version is set at link time (-ldflags "-X main.version=v1.2.3"); otherwise the module's version.
var version = ""

// printVersion writes spade's version, the Go module versions of DuckDB and Arrow it was built with, the
// VCS commit and the Go version.
func printVersion(w io.Writer) {
	v, commit, modified, goVersion := version, "", "", ""
	deps := map[string]string{}
	if bi, ok := debug.ReadBuildInfo(); ok {
		goVersion = bi.GoVersion
		if v == "" {
			v = bi.Main.Version
		}
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			deps[d.Path] = d.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	if commit == "" {
		commit = "unknown (built without VCS information, e.g. -buildvcs=false)"
	}
	dep := func(path string) string {
		if s, ok := deps[path]; ok {
			return s
		}
		return "not linked"
	}
	fmt.Fprintf(w, "spade %s\n", v)
	fmt.Fprintf(w, "commit:  %s%s\n", commit, modified)
	fmt.Fprintf(w, "duckdb:  github.com/duckdb/duckdb-go/v2 %s (bindings %s)\n", dep("github.com/duckdb/duckdb-go/v2"), dep("github.com/duckdb/duckdb-go-bindings"))
	fmt.Fprintf(w, "arrow:   github.com/apache/arrow-go/v18 %s\n", dep("github.com/apache/arrow-go/v18"))
	fmt.Fprintf(w, "go:      %s\n", goVersion)
}

// flagError rewrites the flag package's parse errors in spade's words, naming the flag as it is typed
// (--name), the command (none for the global flags) and, for an unknown flag, the closest of flags:
// "lake ls: unknown flag --sumary (did you mean --summary?)". Other errors are returned as they are; the
// usage line under the message says where the flags are listed.
func flagError(err error, command string, flags []cli.Flag) error {
	where := ""
	if command != "" {
		where = command + ": "
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		for _, f := range flags {
			for _, n := range f.Names() {
				if len(n) > 1 {
					names = append(names, n)
				}
			}
		}
		out := fmt.Sprintf("%sunknown flag %s", where, dashed(name))
		if near := nearestName(name, names); near != "" {
			out += fmt.Sprintf(" (did you mean %s?)", dashed(near))
		}
		return errors.New(out)
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("%s%s needs a value", where, dashed(name))
	}
	if m := invalidFlagValue.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%sinvalid value %s for %s: %s", where, m[1], dashed(m[2]), m[3])
	}
	return err
}

// invalidFlagValue matches the flag package's error for a value its flag cannot parse: the value (quoted),
// the flag's name and why.
var invalidFlagValue = regexp.MustCompile(`^invalid value (".*") for flag -([^:]+): (.*)$`)

// dashed writes a flag's name as it is typed: -x for one letter, --name otherwise.
func dashed(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}
