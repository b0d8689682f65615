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
	// LakeURI is --lake: a local directory or s3://bucket/prefix (defaultLake when empty).
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
	lakeURI := strings.TrimSpace(c.String("lake"))
	if lakeURI == "" { // an empty SPADE_LAKE names no lake, as an empty SPADE_RUN names no run
		lakeURI = defaultLake
	}
	return globalOptions{LakeURI: lakeURI, Runs: runs, Out: c.App.Writer, ErrOut: c.App.ErrWriter,
		In: c.App.Reader, Progress: rep}
}

// openLake opens the lake named by --lake for a command that writes it (a local directory that does not
// exist is created). A corrupt file any reader then meets names the command that repairs it
// (repairCommand).
func (g globalOptions) openLake(ctx context.Context) (*lake.Lake, error) {
	lk, err := lake.Open(ctx, g.LakeURI)
	if err != nil {
		return nil, err
	}
	return g.withRepairHint(ctx, lk), nil
}

// withRepairHint makes lk's corrupt-file errors name the command that repairs the file.
func (g globalOptions) withRepairHint(ctx context.Context, lk *lake.Lake) *lake.Lake {
	lk.SetRepairHint(func(part lake.PartitionKey) string {
		if part.Run == "" {
			return fmt.Sprintf("re-import %s %q with --force", part.Table, part.Corpus)
		}
		return repairCommand(g.LakeURI, part.Run, runConfigOrDefault(ctx, lk, part.Run), lake.Problem{Kind: lake.ProblemCorrupt, Partition: part})
	})
	return lk
}

// openExistingLake opens --lake for a command that needs a lake already there, creating and writing
// nothing: a location that holds no lake is the usage error noLake (exit 2).
func (g globalOptions) openExistingLake(ctx context.Context) (*lake.Lake, error) {
	lk, err := lake.OpenExisting(ctx, g.LakeURI)
	if errors.Is(err, lake.ErrNoLake) {
		return nil, noLake(g.LakeURI)
	}
	if err != nil {
		return nil, err
	}
	return g.withRepairHint(ctx, lk), nil
}

// noLake is the one line for a lake location that holds no lake: the location, and the command that
// creates a lake there.
func noLake(uri string) error {
	return usageError("no lake at %s: create one with `spade --lake %s init --run NAME`, or pass --lake (or set SPADE_LAKE) to an existing lake", uri, uri)
}

// lakeExists fails with noLake (exit 2) for a local lake directory that does not exist.
func lakeExists(uri string) error {
	if !strings.HasPrefix(uri, "s3://") {
		if _, err := os.Stat(uri); errors.Is(err, os.ErrNotExist) {
			return noLake(uri)
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
		return nil, "", nil, g.checkRun(ctx, lk, run)
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
		if err := g.checkRun(ctx, lk, r); err != nil {
			return nil, nil, err
		}
	}
	if len(runs) == 0 {
		runs, err = lk.Runs(ctx)
	}
	return lk, runs, err
}

// checkRun fails for a run the lake does not have (exit 2): the closest name the lake has, every run it
// has, and the command that creates the run, written to work as it stands (with --lake unless the lake
// is the default one).
func (g globalOptions) checkRun(ctx context.Context, lk *lake.Lake, run string) error {
	_, err := lk.RunConfig(ctx, run)
	if !errors.Is(err, lake.ErrNoRun) {
		return err
	}
	runs, lerr := lk.Runs(ctx)
	if lerr != nil {
		return lerr
	}
	msg := fmt.Sprintf("no run %q in %s", run, g.LakeURI)
	if len(runs) == 0 {
		msg += " (the lake has no runs)"
	} else {
		if near := nearestName(run, runs); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		const shown = 20 // a lake of hundreds of runs gets the first ones and the command that lists them all
		if len(runs) > shown {
			msg += fmt.Sprintf("; the lake has %d runs: %s and %d more (`%s` lists them)", len(runs), strings.Join(runs[:shown], ", "), len(runs)-shown, g.command("lake", "ls", "--summary"))
		} else {
			msg += "; the lake has: " + strings.Join(runs, ", ")
		}
	}
	return usageError("%s. Create it with `%s`.", msg, g.command("init", "--run", run))
}

// command writes a spade command line that works as it stands against this lake: the words, after
// --lake URI unless the lake is the default one.
func (g globalOptions) command(words ...string) string {
	line := []string{"spade"}
	if g.LakeURI != defaultLake {
		line = append(line, "--lake", lake.ShellWord(g.LakeURI))
	}
	for _, w := range words {
		line = append(line, lake.ShellWord(w))
	}
	return strings.Join(line, " ")
}

// nearestName returns the name of names closest to s: among those s is a prefix of (or that are a prefix
// of s) when there are any, else among those within an edit distance of a third of its length (at least
// 1); "" when none is close.
func nearestName(s string, names []string) string {
	best, bestDist, bestPrefix := "", max(2, len(s)/3+1), false
	for _, n := range names {
		d := nearest.Distance(s, n)
		prefix := strings.HasPrefix(n, s) || strings.HasPrefix(s, n)
		switch {
		case prefix && (!bestPrefix || d < bestDist):
			best, bestDist, bestPrefix = n, d, true
		case !prefix && !bestPrefix && d < bestDist:
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
