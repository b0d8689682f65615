package main

import (
	"slices"
	"strings"

	"github.com/urfave/cli/v2"
)

// normalizeArgs reorders a command line so that urfave/cli, which stops reading flags at a command's
// first positional argument and reads global flags only before the command, sees every flag the user
// gave: a command's flags written after its positional arguments move in front of them, and a global
// flag (--lake, --run, --log-format) written after the command moves before it, unless the command has
// a flag of that name itself, which then takes it (--help stays with the command: its help is shown). "--" ends the flags: what follows it stays positional
// (and keeps its "--"). A shell-completion request (a last argument of --generate-bash-completion) is
// left as it is. args[0] is the program name.
func normalizeArgs(app *cli.App, args []string) []string {
	if len(args) < 2 || args[len(args)-1] == "--generate-bash-completion" {
		return args
	}
	rest := args[1:]
	var globals []string
	// Global flags before the command.
	for len(rest) > 0 && isFlagArg(rest[0]) {
		n := flagSpan(app.Flags, rest)
		globals = append(globals, rest[:n]...)
		rest = rest[n:]
	}
	// The command path: a command, then subcommands while the next word names one.
	var path []string
	var leaf *cli.Command
	cmds := app.Commands
	for len(rest) > 0 {
		next := findCommand(cmds, rest[0])
		if next == nil {
			break
		}
		path, leaf, cmds = append(path, rest[0]), next, next.Subcommands
		rest = rest[1:]
	}
	if leaf == nil {
		return args
	}
	var flags, positional []string
	dashDash := false
	for len(rest) > 0 {
		arg := rest[0]
		switch {
		case arg == "--":
			dashDash, positional = true, append(positional, rest[1:]...)
			rest = nil
		case !isFlagArg(arg):
			positional = append(positional, arg)
			rest = rest[1:]
		case lookupFlag(leaf.Flags, arg) == nil && lookupFlag(app.Flags, arg) != nil && !isHelpFlag(arg):
			n := flagSpan(app.Flags, rest)
			globals = append(globals, rest[:n]...)
			rest = rest[n:]
		default: // the command's own flag, or one nobody defines (urfave/cli reports it)
			n := flagSpan(leaf.Flags, rest)
			flags = append(flags, rest[:n]...)
			rest = rest[n:]
		}
	}
	out := append([]string{args[0]}, globals...)
	out = append(out, path...)
	if slices.ContainsFunc(flags, isHelpFlag) {
		return append(out, "--help") // the command's help, whatever else was given
	}
	out = append(out, flags...)
	if dashDash {
		out = append(out, "--")
	}
	return append(out, positional...)
}

// isHelpFlag reports whether a flag word asks for help, which every command answers with its own.
func isHelpFlag(arg string) bool { return slices.Contains(cli.HelpFlag.Names(), flagName(arg)) }

// isFlagArg reports whether a word is a flag ("-x", "--name", "--name=v"), not a value or "-".
func isFlagArg(arg string) bool { return len(arg) > 1 && arg[0] == '-' && arg != "--" }

// flagName is a flag word's name: "--out=f" → "out".
func flagName(arg string) string {
	name, _, _ := strings.Cut(strings.TrimLeft(arg, "-"), "=")
	return name
}

// lookupFlag returns the flag of flags that a flag word names, or nil.
func lookupFlag(flags []cli.Flag, arg string) cli.Flag {
	name := flagName(arg)
	for _, f := range flags {
		if slices.Contains(f.Names(), name) {
			return f
		}
	}
	return nil
}

// flagSpan is how many words of args (a flag first) the flag takes: 2 for a flag that takes a value
// given as the next word, else 1 (a bool flag, "--name=value", an unknown flag, or nothing after it).
func flagSpan(flags []cli.Flag, args []string) int {
	f := lookupFlag(flags, args[0])
	if f == nil || strings.Contains(args[0], "=") || len(args) < 2 {
		return 1
	}
	if _, isBool := f.(*cli.BoolFlag); isBool {
		return 1
	}
	return 2
}

// findCommand returns the command of cmds called name (or by one of its aliases), or nil.
func findCommand(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.Name == name || slices.Contains(c.Aliases, name) {
			return c
		}
	}
	return nil
}
