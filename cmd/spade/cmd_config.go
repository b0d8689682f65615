package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
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

// configKeysOptions are the options of `spade config keys`.
type configKeysOptions struct {
	globalOptions
	// Format is --format: text or markdown.
	Format string
}

func newConfigKeysCommand() *cli.Command {
	return &cli.Command{
		Name:      "keys",
		Usage:     "list every configuration key with its type, allowed values, preset values and doc",
		ArgsUsage: "[PREFIX]",
		Description: `PREFIX keeps the keys that start with it (rollout. or llm.agent.); a PREFIX that is a whole key
prints that key alone with its whole doc.

Example: spade config keys grpo.tis`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Value: "text", Usage: "text or markdown (the reference table of docs/configuration.md)"},
		},
		Action: func(c *cli.Context) error {
			if c.NArg() > 1 {
				return usageError("config keys takes at most one PREFIX, got %d arguments", c.NArg())
			}
			return runConfigKeys(c.Context, configKeysOptions{globalOptions: globalsFrom(c), Format: c.String("format")}, c.Args().First())
		},
	}
}

// runConfigKeys prints the keys starting with prefix (every key for "").
func runConfigKeys(_ context.Context, opts configKeysOptions, prefix string) error {
	var keys []config.KeyInfo
	if k, ok := config.KeyDoc(prefix); ok {
		keys = []config.KeyInfo{k} // a whole key: that key alone, with its whole doc
	} else {
		for _, k := range config.Describe() {
			if strings.HasPrefix(k.Key, prefix) {
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return usageError("no key starts with %q: spade config keys lists every key", prefix)
	}
	switch opts.Format {
	case "text":
		writeKeysText(opts.Out, keys, len(keys) == 1 && keys[0].Key == prefix)
	case "markdown":
		writeKeysMarkdown(opts.Out, keys)
	default:
		return usageError("--format must be text or markdown, got %q", opts.Format)
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

// presetConfigs returns every preset's configuration, in config.PresetNames order.
func presetConfigs() []*config.Config {
	names := config.PresetNames()
	cfgs := make([]*config.Config, len(names))
	for i, name := range names {
		cfgs[i], _ = config.Preset(name) // a name PresetNames lists always builds
	}
	return cfgs
}

// presetValues is a key's value in each preset: one value when every preset agrees, else
// "NAME=VALUE" for each preset, with an empty string shown as "" and a value with a line break quoted
// (Go syntax), so a listing keeps one line per key.
func presetValues(presets []*config.Config, key string) string {
	names := config.PresetNames()
	values := make([]string, len(names))
	same := true
	for i, cfg := range presets {
		v, _ := cfg.Get(key)
		switch {
		case v == "":
			v = `""`
		case strings.ContainsAny(v, "\n\r"):
			v = strconv.Quote(v)
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

// keysText is every key as `spade config keys` prints it (the key list of `spade init --help`).
func keysText() string {
	var b strings.Builder
	writeKeysText(&b, config.Describe(), false)
	return b.String()
}

func writeKeysText(out io.Writer, keys []config.KeyInfo, whole bool) {
	presets := presetConfigs()
	for _, k := range keys {
		doc := k.Summary()
		if whole {
			doc = k.Doc
		}
		fmt.Fprintf(out, "%s  %s\n    preset: %s\n    %s\n", k.Key, keyAllowed(k), presetValues(presets, k.Key), doc)
	}
}

func writeKeysMarkdown(out io.Writer, keys []config.KeyInfo) {
	fmt.Fprintln(out, "| key | allowed | presets | meaning |")
	fmt.Fprintln(out, "|---|---|---|---|")
	cell := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	presets := presetConfigs()
	for _, k := range keys {
		fmt.Fprintf(out, "| `%s` | %s | %s | %s |\n", k.Key, cell(keyAllowed(k)), cell(presetValues(presets, k.Key)), cell(k.Doc))
	}
}

// configShowOptions are the options of `spade config show`: a run of the lake, or a preset.
type configShowOptions struct {
	globalOptions
	// Preset is --preset: show this preset instead of a run ("" for a run).
	Preset string
	// Format is --format: yaml or json.
	Format string
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
			if c.Args().Present() {
				return usageError("config show takes no arguments (use --run or --preset), got %q", c.Args().First())
			}
			opts := configShowOptions{globalOptions: globalsFrom(c.Lineage()[1]), Preset: c.String("preset"), Format: c.String("format")}
			// The command's own --run, when given, names the run instead of the global one.
			if run := strings.TrimSpace(c.String("run")); run != "" {
				opts.Runs = []string{run}
			}
			return runConfigShow(c.Context, opts)
		},
	}
}

// runConfigShow prints the configuration opts names.
func runConfigShow(ctx context.Context, opts configShowOptions) error {
	if err := checkChoice("--format", opts.Format, "yaml", "json"); err != nil {
		return err
	}
	var cfg *config.Config
	if opts.Preset != "" {
		var err error
		if cfg, err = config.Preset(opts.Preset); err != nil {
			return asUsage(err)
		}
	} else {
		var err error
		if _, _, cfg, err = opts.openRun(ctx); err != nil {
			return err
		}
	}
	body := cfg.YAML()
	if opts.Format == "json" {
		body = cfg.JSON()
	}
	_, err := opts.Out.Write(body)
	return err
}

// configDiffOptions are the options of `spade config diff`.
type configDiffOptions struct {
	globalOptions
	// Format is --format: text or json.
	Format string
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
			opts := configDiffOptions{globalOptions: globalsFrom(c), Format: c.String("format")}
			return runConfigDiff(c.Context, opts, c.Args().Get(0), c.Args().Get(1))
		},
	}
}

// runConfigDiff prints the keys on which runA's and runB's configurations differ.
func runConfigDiff(ctx context.Context, opts configDiffOptions, runA, runB string) error {
	if err := checkChoice("--format", opts.Format, "text", "json"); err != nil {
		return err
	}
	out := opts.Out
	for _, run := range []string{runA, runB} {
		if err := lake.ValidName(run); err != nil {
			return asUsage(fmt.Errorf("run %q: %w", run, err))
		}
	}
	lk, err := opts.openExistingLake(ctx)
	if err != nil {
		return err
	}
	cfgs := make([]*config.Config, 2)
	for i, run := range []string{runA, runB} {
		if cfgs[i], err = lk.RunConfig(ctx, run); errors.Is(err, lake.ErrNoRun) {
			return opts.checkRun(ctx, lk, run) // names the runs the lake has
		} else if err != nil {
			return err
		}
	}
	a, b := cfgs[0], cfgs[1]
	changes := config.Diff(a, b)
	if opts.Format == "json" {
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
