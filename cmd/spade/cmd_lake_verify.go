package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/progress"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/pool"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// lakeVerifyOptions are the options of `spade lake verify`.
type lakeVerifyOptions struct {
	globalOptions
	// Grace is --grace: objects younger than this are writes in flight, not orphans.
	Grace time.Duration
}

func newLakeVerifyCommand() *cli.Command {
	return &cli.Command{
		Name:  "verify",
		Usage: "check every committed file against its sha256 and list orphans, each problem with the command that repairs it",
		Description: `Checks every file each stage's commit record (or a partition's manifest) references: present, with its
size and sha256. Lists orphans (objects no record references, older than --grace: killed or losing
writers' parts, replaced generations) and half-written temporaries. Exit 0 when clean, 1 when problems
are found. With no --run, every run of the lake.

Example: spade --run r1 lake verify`,
		Flags: []cli.Flag{durationFlag("grace", "1h", "objects younger than this are writes in flight, not orphans")},
		Action: func(c *cli.Context) error {
			return runLakeVerify(c.Context, lakeVerifyOptions{globalOptions: globalsFrom(c), Grace: c.Duration("grace")})
		},
	}
}

// runLakeVerify verifies the --run runs (or every run) and prints each problem with the command that
// repairs it; any problem is an error (exit 1).
func runLakeVerify(ctx context.Context, opts lakeVerifyOptions) error {
	lk, runs, err := opts.openLakeRuns(ctx)
	if err != nil {
		return err
	}
	problems := 0
	for _, run := range runs {
		var task *progress.Task
		rep, err := lk.Verify(ctx, run, lake.VerifyOptions{Grace: opts.Grace, Progress: func(done bool, total int) {
			if !done {
				task = opts.Progress.Start("verify "+run, int64(total), "files")
				return
			}
			task.Add(1)
		}})
		task.Done()
		if err != nil {
			return err
		}
		fmt.Fprintf(opts.Out, "run %s: %d partitions, %d files, %d bytes checked\n", run, rep.Partitions, rep.Files, rep.Bytes)
		cfg := runConfigOrDefault(ctx, lk, run)
		for _, p := range rep.Problems {
			fmt.Fprintf(opts.Out, "  %s %s: %s\n    repair: %s\n", p.Kind, p.Key, p.Detail, repairCommand(opts.LakeURI, run, cfg, p))
		}
		problems += len(rep.Problems)
	}
	if problems > 0 {
		return fmt.Errorf("lake verify: %d problem(s) found; each is listed with the command that repairs it", problems)
	}
	fmt.Fprintln(opts.Out, "ok: every committed file matches its record, and there are no orphans")
	return nil
}

// lakeDamage explains a failed query by the lake: when a file a run's records reference is missing or
// corrupt, it returns an error naming the file, its table and step and the command that repairs it
// (exit 1); nil when every referenced file is sound (the query itself is at fault).
func lakeDamage(ctx context.Context, g globalOptions, lk *lake.Lake, runs []string) error {
	var lines []string
	for _, run := range runs {
		rep, err := lk.Verify(ctx, run, lake.VerifyOptions{Grace: 24 * time.Hour})
		if err != nil {
			return nil
		}
		cfg := runConfigOrDefault(ctx, lk, run)
		for _, p := range rep.Problems {
			if p.Kind == lake.ProblemMissing || p.Kind == lake.ProblemCorrupt {
				lines = append(lines, fmt.Sprintf("%s file %s (table %s, step %d): %s; repair: %s",
					p.Kind, p.Key, p.Partition.Table, p.Partition.Step, p.Detail, repairCommand(g.LakeURI, run, cfg, p)))
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("the lake is damaged: %s", strings.Join(lines, "\n  "))
}

// runConfigOrDefault is the run's configuration, or the defaults when it cannot be read (a repair
// command is still worth printing).
func runConfigOrDefault(ctx context.Context, lk *lake.Lake, run string) *config.Config {
	if cfg, err := lk.RunConfig(ctx, run); err == nil {
		return cfg
	}
	return config.Default()
}

// repairCommand is the one command that repairs a problem: vacuum for orphans and temporaries, a forced
// re-run of the stage that wrote a missing or corrupt file (the one its commit record names, else
// stageOfPartition's), or for an official harness's import a forced re-import of its folder.
func repairCommand(lakeURI, run string, cfg *config.Config, p lake.Problem) string {
	prefix := fmt.Sprintf("spade --lake %s --run %s", lakeURI, run)
	if p.Kind == lake.ProblemOrphan || p.Kind == lake.ProblemTemporary {
		return prefix + " lake vacuum"
	}
	name := p.Stage
	if !isStage(name) {
		// committed by a writer outside stages (an import, an upgrade, a copy, a synthetic run)
		if format, ok := strings.CutPrefix(p.Partition.Fragment, schemas.ImportFragmentPrefix); ok {
			// an official harness's import: re-import its folder
			return fmt.Sprintf("%s eval import --format %s --step %d --force DIR", prefix, format, p.Partition.Step)
		}
		name = stageOfPartition(p.Partition, cfg)
	}
	command := name
	if name == string(pool.Name) {
		command = "pool draw" // the pool stage's command sits under `spade pool`
	}
	return fmt.Sprintf("%s %s --step %d --force", prefix, command, p.Partition.Step)
}

// isStage reports whether name is a stage's (a commit record's stage may also name a writer outside
// stages: an import, `lake upgrade`, `init --from`, a synthetic run).
func isStage(name string) bool {
	return slices.ContainsFunc(steprun.Stages(), func(s stage.Stage) bool { return string(s.Name()) == name })
}

// stageOfPartition names the stage that writes a partition committed by a writer outside stages (a lake
// upgraded from per-partition manifests, a synthetic run), from the stages themselves (steprun.Stages):
//   - a fragment is named after the stage that writes it, whatever its table (schemas.Fragment*:
//     "generate", "rollout", "gate-..."; schemas.EvalFragment: "eval-...");
//   - otherwise a stage whose Writes lists the table; when several do (envs: gate, or pool in a run
//     with sample.pool set), the first one due at the partition's step under cfg, else the first one.
//
// A table no stage writes gets a placeholder naming the table.
func stageOfPartition(key lake.PartitionKey, cfg *config.Config) string {
	stages := steprun.Stages()
	if key.Fragment != "" {
		for _, s := range stages {
			if name := string(s.Name()); key.Fragment == name || strings.HasPrefix(key.Fragment, name+"-") {
				return name
			}
		}
	}
	var writers []stage.Stage
	for _, s := range stages {
		if slices.Contains(s.Writes(), key.Table) {
			writers = append(writers, s)
		}
	}
	for _, s := range writers {
		if s.Due(cfg, key.Step) {
			return string(s.Name())
		}
	}
	if len(writers) > 0 {
		return string(writers[0].Name())
	}
	return "<the stage that writes " + key.Table + ">"
}
