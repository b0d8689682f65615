package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/nearest"
	"github.com/spadekit/spade/internal/progress"
)

// reporterKey is where the app's Before leaves this process's progress reporter in App.Metadata.
const reporterKey = "reporter"

// globalOptions are the app's own flags and streams: what every command's work may read besides its
// own options. Each xOptions embeds them; globalsFrom parses them.
type globalOptions struct {
	// LakeURI is --lake: a local directory or s3://bucket/prefix.
	LakeURI string
	// Runs are the --run names given, blanks dropped (an empty SPADE_RUN names none).
	Runs []string
	// Out is where a command writes its result (stdout); ErrOut takes its warnings (stderr).
	Out, ErrOut io.Writer
	// In is the command's input (stdin).
	In io.Reader
	// Progress is the progress reporter (stage.Env.Progress): bars on a terminal, log lines otherwise,
	// as --log-format says.
	Progress *progress.Reporter
}

// globalsFrom reads the global flags and the app's streams from any command's context.
func globalsFrom(c *cli.Context) globalOptions {
	rep, _ := c.App.Metadata[reporterKey].(*progress.Reporter)
	if rep == nil {
		rep = progress.New(nil, slog.Default(), 0)
	}
	var runs []string
	for _, r := range c.StringSlice("run") {
		if r = strings.TrimSpace(r); r != "" {
			runs = append(runs, r)
		}
	}
	return globalOptions{LakeURI: c.String("lake"), Runs: runs, Out: c.App.Writer, ErrOut: c.App.ErrWriter,
		In: c.App.Reader, Progress: rep}
}

// openLake opens the lake named by --lake (a local directory that does not exist is created). A corrupt
// file any reader then meets names the command that repairs it (repairCommand).
func (g globalOptions) openLake(ctx context.Context) (*lake.Lake, error) {
	lk, err := lake.Open(ctx, g.LakeURI)
	if err != nil {
		return nil, err
	}
	lk.SetRepairHint(func(part lake.PartitionKey) string {
		if part.Run == "" {
			return fmt.Sprintf("re-import %s %q with --force", part.Table, part.Corpus)
		}
		return repairCommand(g.LakeURI, part.Run, runConfigOrDefault(ctx, lk, part.Run), lake.Problem{Kind: lake.ProblemCorrupt, Partition: part})
	})
	return lk, nil
}

// openExistingLake opens --lake, failing with "no lake at PATH" (exit 2) for a local directory that does
// not exist rather than creating an empty one.
func (g globalOptions) openExistingLake(ctx context.Context) (*lake.Lake, error) {
	if err := lakeExists(g.LakeURI); err != nil {
		return nil, err
	}
	return g.openLake(ctx)
}

// lakeExists fails with "no lake at PATH" (exit 2) for a local lake directory that does not exist.
func lakeExists(uri string) error {
	if !strings.HasPrefix(uri, "s3://") {
		if _, err := os.Stat(uri); errors.Is(err, os.ErrNotExist) {
			return usageError("no lake at %s: pass --lake (or set SPADE_LAKE) to a lake, or create one with `spade --lake %s --run NAME init`", uri, uri)
		}
	}
	return nil
}

// runName returns the single --run, or a usage error.
func (g globalOptions) runName() (string, error) {
	switch len(g.Runs) {
	case 0:
		return "", usageError("no run named: pass --run NAME or set SPADE_RUN")
	case 1:
		if err := lake.ValidName(g.Runs[0]); err != nil {
			return "", asUsage(fmt.Errorf("--run: %w", err))
		}
		return g.Runs[0], nil
	}
	return "", usageError("this command takes one --run, got %d", len(g.Runs))
}

// openRun opens the lake and reads the configuration of the single --run.
func (g globalOptions) openRun(ctx context.Context) (*lake.Lake, string, *config.Config, error) {
	run, err := g.runName()
	if err != nil {
		return nil, "", nil, err
	}
	lk, err := g.openExistingLake(ctx)
	if err != nil {
		return nil, "", nil, err
	}
	cfg, err := lk.RunConfig(ctx, run)
	if errors.Is(err, lake.ErrNoRun) {
		return nil, "", nil, asUsage(err)
	}
	if err != nil {
		return nil, "", nil, err
	}
	return lk, run, cfg, nil
}

// openLakeRuns opens an existing lake and returns the --run names (each checked), or every run.
func (g globalOptions) openLakeRuns(ctx context.Context) (*lake.Lake, []string, error) {
	lk, err := g.openExistingLake(ctx)
	if err != nil {
		return nil, nil, err
	}
	runs := g.Runs
	for _, r := range runs {
		if err := checkRun(ctx, lk, r); err != nil {
			return nil, nil, err
		}
	}
	if len(runs) == 0 {
		runs, err = lk.Runs(ctx)
	}
	return lk, runs, err
}

// checkRun fails for a run the lake does not have, naming the runs it has (exit 2).
func checkRun(ctx context.Context, lk *lake.Lake, run string) error {
	_, err := lk.RunConfig(ctx, run)
	if !errors.Is(err, lake.ErrNoRun) {
		return err
	}
	runs, lerr := lk.Runs(ctx)
	if lerr != nil {
		return lerr
	}
	msg := fmt.Sprintf("no run %q in %s", run, lk.URI())
	if len(runs) == 0 {
		msg += " (the lake has no runs)."
	} else {
		if near := nearestName(run, runs); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		msg += "; the lake has: " + strings.Join(runs, ", ") + "."
	}
	return usageError("%s Create a run with `spade --run NAME init`.", msg)
}

// nearestName returns the name of names closest to s by edit distance, if it is close (at most a third
// of its length, at least 1).
func nearestName(s string, names []string) string {
	best, bestDist := "", max(2, len(s)/3+1)
	for _, n := range names {
		if d := nearest.Distance(s, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// phases counts the named phases of a long command on the progress reporter; next starts the next one
// (shown beside the bar), done ends the task.
type phases struct {
	task *progress.Task
	n    int
}

// startPhases starts a task of total phases called name on the reporter.
func (g globalOptions) startPhases(name string, total int) *phases {
	return &phases{task: g.Progress.Start(name, int64(total), "phases")}
}

func (p *phases) next(what string) {
	if p.n > 0 {
		p.task.Add(1)
	}
	p.n++
	p.task.Note("%s", what)
}

func (p *phases) done() { p.task.Done() }
