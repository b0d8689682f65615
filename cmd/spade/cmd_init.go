package main

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
)

func init() {
	register(&cli.Command{
		Name:  "init",
		Usage: "create a run with its configuration (written once to run.json)",
		Description: "Creates the run named by --run from a preset (Table 5 of the paper), then a JSON config file, then\n" +
			"--set overrides, in that order. An existing run is never changed: a changed setting is a new run.\n\n" +
			"Presets: " + strings.Join(config.PresetNames(), ", ") + "\n" +
			"Keys: " + strings.Join(config.Keys(), ", ") + "\n\n" +
			"Example: spade --run r1 init --preset qwen3-8b-games --set rollout.group_size=8",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "preset", Value: "qwen3-30b-a3b-games", Usage: "preset name"},
			&cli.StringFlag{Name: "config", Usage: "JSON file of keys (nested objects or dotted keys)"},
			&cli.StringSliceFlag{Name: "set", Usage: "key=value override (repeatable)"},
		},
		Action: func(c *cli.Context) error {
			run, err := runName(c)
			if err != nil {
				return err
			}
			cfg, err := config.Preset(c.String("preset"))
			if err != nil {
				return asUsage(err)
			}
			if f := c.String("config"); f != "" {
				if err := cfg.LoadFile(f); err != nil {
					return asUsage(err)
				}
			}
			for _, kv := range c.StringSlice("set") {
				key, value, ok := strings.Cut(kv, "=")
				if !ok {
					return usageError("--set %q: want key=value", kv)
				}
				if err := cfg.Set(key, value); err != nil {
					return asUsage(err)
				}
			}
			// Paths in run.json are absolute, so every later command finds them from any directory.
			for _, r := range []*config.Role{&cfg.LLM.Designer, &cfg.LLM.Agent, &cfg.LLM.Screen} {
				if r.BaseURL, err = llm.AbsReplayURL(r.BaseURL); err != nil {
					return err
				}
			}
			if f := cfg.LLM.PromptFile; f != "" && !strings.Contains(f, "://") && !filepath.IsAbs(f) {
				if cfg.LLM.PromptFile, err = filepath.Abs(f); err != nil {
					return err
				}
			}
			if err := cfg.Validate(); err != nil {
				return asUsage(err)
			}
			lk, err := openLake(c)
			if err != nil {
				return err
			}
			if err := lk.CreateRun(c.Context, run, cfg); err != nil {
				if errors.Is(err, lake.ErrRunExists) {
					return asUsage(err)
				}
				return err
			}
			fmt.Fprintf(c.App.Writer, "created run %s in %s (preset %s)\n", run, lk.URI(), cfg.Preset)
			return nil
		},
	})
}
