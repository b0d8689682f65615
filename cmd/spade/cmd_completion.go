package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
)

// completeCommand is the hidden first word under which a shell's completion script asks spade for the
// candidates: `spade __complete WORD... CURRENT` prints, one a line, what may replace CURRENT (the word
// under the cursor, "" for a new one) after the words before it.
const completeCommand = "__complete"

// newCompletionCommand prints a shell completion script that asks spade itself for the candidates.
func newCompletionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print a shell completion script: bash, zsh or fish",
		ArgsUsage: "bash|zsh|fish",
		Description: `The script asks spade for the candidates as you type: commands and subcommands, each command's
flags and the global ones, preset names after --preset, the lake's runs after --run and --from (the lake
named by --lake or SPADE_LAKE), the values of --log-format; files where a command takes a file.

Install for bash:  spade completion bash > ~/.local/share/bash-completion/completions/spade
              or:  echo 'source <(spade completion bash)' >> ~/.bashrc
Install for zsh:   echo 'source <(spade completion zsh)' >> ~/.zshrc
Install for fish:  spade completion fish > ~/.config/fish/completions/spade.fish`,
		Action: func(c *cli.Context) error {
			return runCompletion(globalsFrom(c), c.Args().Slice())
		},
	}
}

// runCompletion prints the completion script for the shell args[0] names: bash, zsh or fish.
func runCompletion(opts globalOptions, args []string) error {
	shell := ""
	if len(args) > 0 {
		shell = args[0]
	}
	switch shell {
	case "bash":
		fmt.Fprint(opts.Out, bashCompletion)
	case "zsh":
		fmt.Fprint(opts.Out, "autoload -U +X compinit && compinit\nautoload -U +X bashcompinit && bashcompinit\n"+bashCompletion)
	case "fish":
		io.WriteString(opts.Out, fishCompletion)
	default:
		return usageError("completion: want bash, zsh or fish, got %q", shell)
	}
	return nil
}

// bashCompletion passes the words up to and including the one under the cursor to spade __complete and
// offers what it prints; when it prints nothing (a file argument), bash completes file names.
const bashCompletion = `# spade shell completion: the candidates come from spade __complete
_spade_complete() {
  local IFS=$'\n'
  COMPREPLY=($("${COMP_WORDS[0]}" __complete "${COMP_WORDS[@]:1:$COMP_CWORD}" 2>/dev/null))
}
complete -o bashdefault -o default -F _spade_complete spade
`

// fishCompletion does the same for fish, completing paths when spade offers nothing.
const fishCompletion = `# spade shell completion: the candidates come from spade __complete
function __spade_complete
    set -l words (commandline -opc)
    set -l cur (commandline -ct)
    set -l out (command $words[1] __complete $words[2..-1] "$cur" 2>/dev/null)
    if test (count $out) -gt 0
        printf '%s\n' $out
    else
        __fish_complete_path "$cur"
    end
end
complete -c spade -f -a '(__spade_complete)'
`

// complete writes the candidates for the last of words (the word being typed) after the others, each
// on its own line and starting with what was typed: a flag's values after a flag that takes one (presets,
// runs, log formats), flags (the command's and the global ones) for a word starting with "-", else the
// subcommands of the command reached. Nothing for a positional argument: the shell offers files.
func complete(ctx context.Context, app *cli.App, words []string, out io.Writer) {
	cur := ""
	if len(words) > 0 {
		cur, words = words[len(words)-1], words[:len(words)-1]
	}
	// bash splits --flag=value at the "=" (COMP_WORDBREAKS): "--preset" "=" "qwen3" completes the value
	// alone, and "--preset" "=" (nothing typed after it yet) all of them
	if cur == "=" && len(words) > 0 && isFlagArg(words[len(words)-1]) {
		cur = ""
	} else if n := len(words); n >= 2 && words[n-1] == "=" && isFlagArg(words[n-2]) {
		words = words[:n-1]
	}
	var leaf *cli.Command
	cmds := app.Commands
	lakeURI := os.Getenv("SPADE_LAKE")
	positional := false
	for i := 0; i < len(words); i++ {
		w := words[i]
		if isFlagArg(w) {
			flags := app.Flags
			if leaf != nil && lookupFlag(leaf.Flags, w) != nil {
				flags = leaf.Flags
			}
			n := flagSpan(flags, words[i:])
			if flagName(w) == "lake" {
				if v, ok := strings.CutPrefix(w, "--lake="); ok {
					lakeURI = v
				} else if n == 2 {
					lakeURI = words[i+1]
				}
			}
			i += n - 1
			continue
		}
		if next := findCommand(cmds, w); next != nil && !positional {
			leaf, cmds = next, next.Subcommands
			continue
		}
		positional = true
	}
	var candidates []string
	prev := ""
	if len(words) > 0 {
		prev = words[len(words)-1]
	}
	name, _, hasValue := strings.Cut(cur, "=")
	switch {
	case isFlagArg(prev) && !strings.Contains(prev, "=") && takesValue(app, leaf, prev):
		candidates = flagValues(ctx, flagName(prev), lakeURI)
	case strings.HasPrefix(cur, "-") && hasValue && takesValue(app, leaf, name):
		for _, v := range flagValues(ctx, flagName(name), lakeURI) {
			candidates = append(candidates, name+"="+v) // --preset=qwen3-8b-games: the shell replaces the word
		}
	case strings.HasPrefix(cur, "-"):
		var flags []cli.Flag
		if leaf != nil {
			flags = append(flags, leaf.Flags...)
		}
		for _, f := range append(flags, app.Flags...) {
			for _, name := range f.Names() {
				if len(name) == 1 {
					name = "-" + name
				} else {
					name = "--" + name
				}
				if !slices.Contains(candidates, name) {
					candidates = append(candidates, name)
				}
			}
		}
	case leaf != nil && leaf.Name == "help" || leaf == nil:
		for _, c := range app.Commands {
			if !c.Hidden && (leaf == nil || c.Name != "help") {
				candidates = append(candidates, c.Name)
			}
		}
	case leaf.Name == "completion":
		candidates = []string{"bash", "zsh", "fish"}
	case !positional:
		for _, c := range leaf.Subcommands {
			if !c.Hidden && c.Name != "help" {
				candidates = append(candidates, c.Name)
			}
		}
	}
	for _, c := range candidates {
		if strings.HasPrefix(c, cur) {
			fmt.Fprintln(out, c)
		}
	}
}

// flagValues are the values completion offers for the flag name (without dashes): preset names, the
// lake's runs, the log formats; none for the others (the shell offers files).
func flagValues(ctx context.Context, name, lakeURI string) []string {
	switch name {
	case "preset":
		return config.PresetNames()
	case "run", "from":
		return lakeRuns(ctx, lakeURI)
	case "log-format":
		return []string{"auto", "text", "json"}
	}
	return nil
}

// takesValue reports whether a flag word names a flag (the command's or a global one) that takes a value.
func takesValue(app *cli.App, leaf *cli.Command, word string) bool {
	var f cli.Flag
	if leaf != nil {
		f = lookupFlag(leaf.Flags, word)
	}
	if f == nil {
		f = lookupFlag(app.Flags, word)
	}
	if f == nil {
		return false
	}
	_, isBool := f.(*cli.BoolFlag)
	return !isBool
}

// lakeRuns lists the runs of the lake at uri (the default lake when empty) for completion, opening it as
// a reader does: nothing when it holds no lake.
func lakeRuns(ctx context.Context, uri string) []string {
	if uri == "" {
		uri = defaultLake
	}
	lk, err := lake.OpenExisting(ctx, uri)
	if err != nil {
		return nil
	}
	runs, _ := lk.Runs(ctx)
	return runs
}
