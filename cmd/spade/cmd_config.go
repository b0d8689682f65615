package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
)

// newConfigCommand is `spade config`: the keys a run configuration has, one run's values, and what
// differs between two runs.
func newConfigCommand() *cli.Command {
	return &cli.Command{
		Name:  "config",
		Usage: "list the configuration keys, show a run's configuration, compare two runs'",
		Description: "Every key's type, allowed values, value in each preset and doc come from one declaration in\n" +
			"internal/config; `spade init --help` prints the same list.\n\n" +
			"Example: spade config keys rollout.\n" +
			"         spade --run r1 config show --format yaml > r1.yaml\n" +
			"         spade config diff r1 r1b",
		Subcommands: []*cli.Command{newConfigKeysCommand(), newConfigShowCommand(), newConfigDiffCommand()},
	}
}

// configKeysOptions are `spade config keys`'s flags.
type configKeysOptions struct {
	format string // text or markdown
}

func newConfigKeysCommand() *cli.Command {
	return &cli.Command{
		Name:      "keys",
		Usage:     "list every configuration key with its type, allowed values, preset values and doc",
		ArgsUsage: "[PREFIX]",
		Description: "PREFIX keeps the keys that start with it (rollout. or llm.agent.); a PREFIX that names one key\n" +
			"prints its whole doc.\n\nExample: spade config keys grpo.tis",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or markdown (the reference table of docs/configuration.md)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("config keys takes at most one PREFIX, got %d arguments", c.NArg())
			}
			return runConfigKeys(c.Context, configKeysOptions{format: c.String("format")}, c.Args().First(), c.App.Writer)
		},
	}
}

// runConfigKeys prints the keys starting with prefix (every key for "").
func runConfigKeys(_ context.Context, opts configKeysOptions, prefix string, out io.Writer) error {
	var keys []config.KeyInfo
	for _, k := range config.Describe() {
		if strings.HasPrefix(k.Key, prefix) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return usageError("no key starts with %q: spade config keys lists every key", prefix)
	}
	switch opts.format {
	case "text":
		writeKeysText(out, keys, len(keys) == 1 && keys[0].Key == prefix)
	case "markdown":
		writeKeysMarkdown(out, keys)
	default:
		return usageError("--format must be text or markdown, got %q", opts.format)
	}
	return nil
}

// keyAllowed is a key's type with its allowed values or range, as one phrase: "integer >= 1",
// "enum: chat | tokens".
func keyAllowed(k config.KeyInfo) string {
	switch {
	case len(k.Values) > 0:
		return "one of " + strings.Join(k.Values, " | ")
	case k.Range != "":
		return k.Type + " " + k.Range
	}
	return k.Type
}

// presetValues is a key's value in each preset: one value when every preset agrees, else
// "NAME=VALUE" for each preset, with an empty string shown as "".
func presetValues(key string) string {
	names := config.PresetNames()
	values := make([]string, len(names))
	same := true
	for i, name := range names {
		cfg, err := config.Preset(name)
		if err != nil {
			continue
		}
		v, _ := cfg.Get(key)
		if v == "" {
			v = `""`
		}
		values[i] = v
		same = same && v == values[0]
	}
	if same {
		return values[0] + " (every preset)"
	}
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name + "=" + values[i]
	}
	return strings.Join(parts, ", ")
}

// firstSentence cuts a doc to its first sentence: up to the first ". " or the end.
func firstSentence(doc string) string {
	if i := strings.Index(doc, ". "); i >= 0 {
		return doc[:i+1]
	}
	return doc
}

func writeKeysText(out io.Writer, keys []config.KeyInfo, whole bool) {
	for _, k := range keys {
		doc := firstSentence(k.Doc)
		if whole {
			doc = k.Doc
		}
		fmt.Fprintf(out, "%s  %s\n    preset: %s\n    %s\n", k.Key, keyAllowed(k), presetValues(k.Key), doc)
	}
}

func writeKeysMarkdown(out io.Writer, keys []config.KeyInfo) {
	fmt.Fprintln(out, "| key | allowed | presets | meaning |")
	fmt.Fprintln(out, "|---|---|---|---|")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	for _, k := range keys {
		fmt.Fprintf(out, "| `%s` | %s | %s | %s |\n", k.Key, cell(keyAllowed(k)), cell(presetValues(k.Key)), cell(k.Doc))
	}
}

// configShowOptions are `spade config show`'s flags: a run of the lake, or a preset.
type configShowOptions struct {
	lake   string
	run    string
	preset string
	format string // yaml or json
}

func newConfigShowCommand() *cli.Command {
	return &cli.Command{
		Name:  "show",
		Usage: "print a run's configuration (or a preset's) as YAML or JSON",
		Description: "The output is a file `spade init --config` takes back.\n\n" +
			"Example: spade --run r1 config show\n" +
			"         spade config show --preset qwen3-8b-games --format json",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "run", Usage: "the run (default: the global --run or SPADE_RUN)"},
			&cli.StringFlag{Name: "preset", Usage: "show a preset instead of a run"},
			&cli.StringFlag{Name: "format", Value: "yaml", Usage: "yaml or json"},
		},
		Action: func(c *cli.Context) error {
			opts := configShowOptions{lake: c.String("lake"), preset: c.String("preset"), format: c.String("format")}
			if c.Args().Present() {
				return usageError("config show takes no arguments (use --run or --preset), got %q", c.Args().First())
			}
			if opts.preset == "" {
				run, err := localOrGlobalRun(c)
				if err != nil {
					return err
				}
				opts.run = run
			}
			return runConfigShow(c.Context, opts, c.App.Writer)
		},
	}
}

// localOrGlobalRun returns the subcommand's own --run when given, else the single global --run.
func localOrGlobalRun(c *cli.Context) (string, error) {
	if run := strings.TrimSpace(c.String("run")); c.IsSet("run") && run != "" {
		if err := lake.ValidName(run); err != nil {
			return "", asUsage(fmt.Errorf("--run: %w", err))
		}
		return run, nil
	}
	// The parent (`spade config`) defines no --run of its own, so its lookup reaches the global flag.
	return runName(c.Lineage()[1])
}

// runConfigShow prints the configuration opts names.
func runConfigShow(ctx context.Context, opts configShowOptions, out io.Writer) error {
	if opts.format != "yaml" && opts.format != "json" {
		return usageError("--format must be yaml or json, got %q", opts.format)
	}
	var cfg *config.Config
	if opts.preset != "" {
		var err error
		if cfg, err = config.Preset(opts.preset); err != nil {
			return asUsage(err)
		}
	} else {
		var err error
		if cfg, err = readRunConfig(ctx, opts.lake, opts.run); err != nil {
			return err
		}
	}
	if opts.format == "json" {
		_, err := out.Write(cfg.JSON())
		return err
	}
	_, err := out.Write(cfg.YAML())
	return err
}

// readRunConfig opens the lake at uri and reads run's configuration; a missing run is a usage error.
func readRunConfig(ctx context.Context, uri, run string) (*config.Config, error) {
	lk, err := lake.Open(ctx, uri)
	if err != nil {
		return nil, err
	}
	cfg, err := lk.RunConfig(ctx, run)
	if errors.Is(err, lake.ErrNoRun) {
		return nil, asUsage(err)
	}
	return cfg, err
}

// configDiffOptions are `spade config diff`'s flags.
type configDiffOptions struct {
	lake   string
	format string // text or json
}

func newConfigDiffCommand() *cli.Command {
	return &cli.Command{
		Name:      "diff",
		Usage:     "list the keys whose values differ between two runs, with both values",
		ArgsUsage: "RUN_A RUN_B",
		Description: "Exit 0 whether or not the runs differ; `spade view`'s compare page shows the same table.\n\n" +
			"Example: spade config diff r1 r1b",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or json"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() != 2 {
				return usageError("config diff takes two runs, RUN_A RUN_B; got %d arguments", c.NArg())
			}
			opts := configDiffOptions{lake: c.String("lake"), format: c.String("format")}
			return runConfigDiff(c.Context, opts, c.Args().Get(0), c.Args().Get(1), c.App.Writer)
		},
	}
}

// runConfigDiff prints the keys on which runA's and runB's configurations differ.
func runConfigDiff(ctx context.Context, opts configDiffOptions, runA, runB string, out io.Writer) error {
	if opts.format != "text" && opts.format != "json" {
		return usageError("--format must be text or json, got %q", opts.format)
	}
	for _, run := range []string{runA, runB} {
		if err := lake.ValidName(run); err != nil {
			return asUsage(fmt.Errorf("run %q: %w", run, err))
		}
	}
	a, err := readRunConfig(ctx, opts.lake, runA)
	if err != nil {
		return err
	}
	b, err := readRunConfig(ctx, opts.lake, runB)
	if err != nil {
		return err
	}
	changes := config.Diff(a, b)
	if opts.format == "json" {
		type change struct {
			Key string `json:"key"`
			A   string `json:"a"`
			B   string `json:"b"`
		}
		list := make([]change, len(changes))
		for i, ch := range changes {
			list[i] = change{ch.Key, ch.A, ch.B}
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"a": runA, "b": runB, "changes": list})
	}
	if len(changes) == 0 {
		fmt.Fprintf(out, "runs %s and %s have the same configuration\n", runA, runB)
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "key\t%s\t%s\n", runA, runB)
	show := func(v string) string {
		if v == "" {
			return `""`
		}
		return v
	}
	for _, ch := range changes {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ch.Key, show(ch.A), show(ch.B))
	}
	return tw.Flush()
}
