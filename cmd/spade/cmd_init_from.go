package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
)

// applyOverrides applies --config then --set to cfg and validates it.
func applyOverrides(cfg *config.Config, opts overrideOptions) error {
	if f := opts.ConfigFile; f != "" {
		if err := cfg.LoadFile(f); err != nil {
			return asUsage(err)
		}
	}
	for _, kv := range opts.Sets {
		key, value, ok := strings.Cut(kv, "=")
		if !ok {
			return usageError("--set %q: want key=value", kv)
		}
		if err := cfg.Set(key, value); err != nil {
			return asUsage(err)
		}
	}
	// Paths in run.json are absolute, so every later command finds them from any directory.
	var err error
	for _, r := range []*config.Role{&cfg.LLM.Designer, &cfg.LLM.Agent, &cfg.LLM.Screen} {
		if r.BaseURL, err = llm.AbsReplayURL(r.BaseURL); err != nil {
			return err
		}
	}
	for _, f := range []*string{&cfg.LLM.PromptFile, &cfg.Rollout.PromptFile, &cfg.Generate.HintPromptFile} {
		if *f != "" && !strings.Contains(*f, "://") && !filepath.IsAbs(*f) {
			if *f, err = filepath.Abs(*f); err != nil {
				return err
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return asUsage(err)
	}
	return nil
}

// runInitFrom creates run as a child of --from RUN@STEP: the parent's configuration with --config and --set
// applied and Parent recorded, and a copy of every partition the parent committed at steps ≤ STEP (the
// tables the next steps read: the pool's envs, memory, ema_state, train_metrics for the weights version,
// samples for the used documents, and the rest so a pool that spans STEP can end in the child). The copy
// comes first and run.json last, so an interrupted init leaves no run and can be repeated.
func runInitFrom(ctx context.Context, opts initOptions, run string) error {
	if opts.PresetSet {
		return usageError("--from and --preset: a child run starts from its parent's configuration; change settings with --set")
	}
	parent, stepText, ok := strings.Cut(opts.From, "@")
	step, err := strconv.ParseInt(stepText, 10, 64)
	if !ok || parent == "" || err != nil || step < 0 {
		return usageError("--from %q: want RUN@STEP, e.g. r1@199", opts.From)
	}
	if parent == run {
		return usageError("--from %s: a run cannot be its own parent; name the child with --run", opts.From)
	}
	lk, err := opts.openLake(ctx)
	if err != nil {
		return err
	}
	cfg, err := lk.RunConfig(ctx, parent)
	if errors.Is(err, lake.ErrNoRun) {
		return opts.checkRun(ctx, lk, parent)
	}
	if err != nil {
		return err
	}
	if _, err := lk.RunConfig(ctx, run); err == nil {
		return asUsage(fmt.Errorf("%w: %s (a changed setting is a new run: pick another --run)", lake.ErrRunExists, run))
	} else if !errors.Is(err, lake.ErrNoRun) {
		return err
	}
	done, err := lk.Steps(ctx, parent, "train_metrics")
	if err != nil {
		return err
	}
	if len(done) == 0 || done[len(done)-1] < step {
		last := "none"
		if len(done) > 0 {
			last = strconv.FormatInt(done[len(done)-1], 10)
		}
		return usageError("--from %s: run %s has not finished step %d (its last trained step: %s)", opts.From, parent, step, last)
	}
	cfg.Parent = &config.Parent{Run: parent, Step: step}
	if err := applyOverrides(cfg, opts.overrideOptions); err != nil {
		return err
	}
	copied, err := lk.CopyRun(ctx, parent, run, step)
	if err != nil {
		return err
	}
	if err := createRun(ctx, lk, run, cfg); err != nil {
		return err
	}
	fmt.Fprintf(opts.Out, "created run %s in %s from %s at step %d (%d partitions copied); continue with --steps %d-...\n",
		run, lk.URI(), parent, step, copied, step+1)
	return nil
}
