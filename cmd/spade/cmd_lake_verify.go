package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spadekit/spade/internal/progress"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// The lake's maintenance commands (verify, vacuum, export) join `spade lake` from this file, so
// cmd_lake.go stays as it is.
func init() {
	graceFlag := func(name, value, usage string) cli.Flag {
		return &cli.DurationFlag{Name: name, Value: mustDuration(value), Usage: usage}
	}
	addLakeSubcommands(
		&cli.Command{
			Name:  "verify",
			Usage: "check every committed file against its sha256 and list orphans, each problem with the command that repairs it",
			Description: "Checks every file each stage's commit record (or a partition's manifest) references: present, with its\n" +
				"size and sha256. Lists orphans (objects no record references, older than --grace: killed or losing\n" +
				"writers' parts, replaced generations) and half-written temporaries. Exit 0 when clean, 1 when problems\n" +
				"are found. With no --run, every run of the lake.\n\nExample: spade --run r1 lake verify",
			Flags: []cli.Flag{graceFlag("grace", "1h", "objects younger than this are writes in flight, not orphans")},
			Action: func(c *cli.Context) error {
				lk, runs, err := openLakeRuns(c)
				if err != nil {
					return err
				}
				problems := 0
				for _, run := range runs {
					var task *progress.Task
					rep, err := lk.Verify(c.Context, run, lake.VerifyOptions{Grace: c.Duration("grace"), Progress: func(done bool, total int) {
						if !done {
							task = reporter.Start("verify "+run, int64(total), "files")
							return
						}
						task.Add(1)
					}})
					task.Done()
					if err != nil {
						return err
					}
					fmt.Fprintf(c.App.Writer, "run %s: %d partitions, %d files, %d bytes checked\n", run, rep.Partitions, rep.Files, rep.Bytes)
					for _, p := range rep.Problems {
						fmt.Fprintf(c.App.Writer, "  %s %s: %s\n    repair: %s\n", p.Kind, p.Key, p.Detail, repairCommand(c, run, p))
					}
					problems += len(rep.Problems)
				}
				if problems > 0 {
					return fmt.Errorf("lake verify: %d problem(s) found; each is listed with the command that repairs it", problems)
				}
				fmt.Fprintln(c.App.Writer, "ok: every committed file matches its record, and there are no orphans")
				return nil
			},
		},
		&cli.Command{
			Name:  "vacuum",
			Usage: "delete orphans and replaced generations no commit record references",
			Description: "Deletes what `spade lake verify` lists as orphans and temporaries, older than --older-than, and\n" +
				"never anything a commit record or manifest references. Safe while writers run, as long as --older-than\n" +
				"exceeds the longest stage's run time (a write in flight is younger). With no --run, every run.\n\n" +
				"Example: spade --run r1 lake vacuum --older-than 24h --dry-run",
			Flags: []cli.Flag{
				graceFlag("older-than", "1h", "delete only objects older than this"),
				&cli.BoolFlag{Name: "dry-run", Usage: "list what would be deleted, delete nothing"},
			},
			Action: func(c *cli.Context) error {
				lk, runs, err := openLakeRuns(c)
				if err != nil {
					return err
				}
				verb := "removed"
				if c.Bool("dry-run") {
					verb = "would remove"
				}
				total := 0
				for _, run := range runs {
					removed, err := lk.Vacuum(c.Context, run, lake.VacuumOptions{OlderThan: c.Duration("older-than"), DryRun: c.Bool("dry-run")})
					for _, p := range removed {
						fmt.Fprintf(c.App.Writer, "%s %s (%s)\n", verb, p.Key, p.Detail)
					}
					total += len(removed)
					if err != nil {
						return err
					}
				}
				fmt.Fprintf(c.App.Writer, "%s %d object(s)\n", verb, total)
				return nil
			},
		},
		&cli.Command{
			Name:  "upgrade",
			Usage: "rename a lake written by an older spade (padded step=NNNNNN folders) to the current layout",
			Description: "Lakes written before layout 2 name steps step=000002 and fragments fragment=NAME; this renames\n" +
				"every such object (step=2, fragment-NAME) and records the layout in _lake.json. Contents are not\n" +
				"changed. Run it once with no other spade command using the lake; an interrupted upgrade loses nothing\n" +
				"and finishes when run again. A lake already current is left as it is.\n\n" +
				"Example: spade --lake s3://bucket/spade lake upgrade",
			Action: func(c *cli.Context) error {
				uri := c.String("lake")
				if err := lakeExists(uri); err != nil {
					return err
				}
				lk, err := lake.OpenForUpgrade(c.Context, uri)
				if err != nil {
					return err
				}
				rep, err := lk.Upgrade(c.Context)
				if err != nil {
					return fmt.Errorf("lake upgrade: %w (nothing is lost: run it again to finish)", err)
				}
				if rep.AlreadyCurrent {
					fmt.Fprintf(c.App.Writer, "%s is at layout %d already: nothing to do\n", uri, lake.Layout)
					return nil
				}
				fmt.Fprintf(c.App.Writer, "upgraded %s to layout %d: %d objects (%d bytes) renamed\n", uri, lake.Layout, rep.Moved, rep.Bytes)
				return nil
			},
		},
		&cli.Command{
			Name:      "export",
			Usage:     "write a run's committed rows as plain Parquet any engine reads with a glob",
			ArgsUsage: "DEST",
			Description: "Writes DEST/<table>/data.parquet for every table of the run: committed rows only (what `spade query`\n" +
				"sees), a leading `run` column, `step` a BIGINT column. Read it with any engine:\n" +
				"read_parquet('DEST/episodes/*.parquet'). DEST must not exist or be empty.\n\n" +
				"Example: spade --run r1 lake export ./r1-export",
			Action: func(c *cli.Context) error {
				if c.NArg() != 1 {
					return usageError("lake export takes one DEST directory, got %d arguments", c.NArg())
				}
				dest := c.Args().First()
				lk, err := openExistingLake(c)
				if err != nil {
					return err
				}
				run, err := runName(c)
				if err != nil {
					return err
				}
				if err := checkRun(c.Context, lk, run); err != nil {
					return err
				}
				n, err := exportRun(c.Context, lk, run, dest)
				if err != nil {
					return err
				}
				fmt.Fprintf(c.App.Writer, "exported %d tables of run %s to %s: read_parquet('%s/<table>/*.parquet')\n", n, run, dest, dest)
				return nil
			},
		},
	)
}

func mustDuration(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// addLakeSubcommands adds subcommands to `spade lake` (registered by cmd_lake.go, whose init runs first).
func addLakeSubcommands(subs ...*cli.Command) {
	for _, c := range commands {
		if c.Name == "lake" {
			c.Subcommands = append(c.Subcommands, subs...)
			return
		}
	}
	panic("spade lake is not registered")
}

// openExistingLake opens --lake, failing with "no lake at PATH" (exit 2) for a local directory that does
// not exist rather than creating an empty one.
func openExistingLake(c *cli.Context) (*lake.Lake, error) {
	if err := lakeExists(c.String("lake")); err != nil {
		return nil, err
	}
	return openLake(c)
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

// openLakeRuns opens an existing lake and returns the --run names (each checked), or every run.
func openLakeRuns(c *cli.Context) (*lake.Lake, []string, error) {
	lk, err := openExistingLake(c)
	if err != nil {
		return nil, nil, err
	}
	runs := runFlags(c)
	for _, r := range runs {
		if err := checkRun(c.Context, lk, r); err != nil {
			return nil, nil, err
		}
	}
	if len(runs) == 0 {
		runs, err = lk.Runs(c.Context)
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
		if d := editDistance(s, n); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// repairCommand is the one command that repairs a problem: vacuum for orphans and temporaries, a forced
// re-run of the stage that wrote a missing or corrupt file.
func repairCommand(c *cli.Context, run string, p lake.Problem) string {
	prefix := fmt.Sprintf("spade --lake %s --run %s", c.String("lake"), run)
	if p.Kind == lake.ProblemOrphan || p.Kind == lake.ProblemTemporary {
		return prefix + " lake vacuum"
	}
	stage := p.Stage
	if stage == "" {
		stage = stageOfPartition(p.Partition)
	}
	return fmt.Sprintf("%s %s --step %d --force", prefix, stage, p.Partition.Step)
}

// stageOfPartition names the stage that writes a partition committed without a stage record (lakes
// written before commit records): docs/architecture.md, "Stages".
func stageOfPartition(key lake.PartitionKey) string {
	switch {
	case strings.HasPrefix(key.Fragment, "gate"):
		return "gate"
	case key.Fragment != "":
		return key.Fragment // generate, rollout
	}
	switch key.Table {
	case schemas.SamplesSpec.Name:
		return "sample"
	case schemas.CandidatesSpec.Name:
		return "generate"
	case schemas.GateResultsSpec.Name, schemas.EnvsSpec.Name:
		return "gate"
	case schemas.TurnsSpec.Name, schemas.EpisodesSpec.Name:
		return "rollout"
	case schemas.EMAStateSpec.Name, schemas.MemorySpec.Name, schemas.DesignerRewardsSpec.Name:
		return "regret"
	case schemas.GRPOBatchesSpec.Name, schemas.TrainMetricsSpec.Name:
		return "grpo"
	}
	return "<the stage that writes " + key.Table + ">"
}

// exportRun writes every table of a run to dest/<table>/data.parquet through DuckDB's views (committed
// rows, a `run` column), and returns the number of tables.
func exportRun(ctx context.Context, lk *lake.Lake, run, dest string) (int, error) {
	if entries, err := os.ReadDir(dest); err == nil && len(entries) > 0 {
		return 0, usageError("lake export: %s exists and is not empty: pick a new directory", dest)
	}
	sess, err := duck.OpenRuns(ctx, lk, run)
	if err != nil {
		return 0, err
	}
	defer sess.Close()
	tables := schemas.RunTables()
	sort.Strings(tables)
	for _, table := range tables {
		dir := filepath.Join(dest, table)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return 0, fmt.Errorf("lake export: %w", err)
		}
		path := filepath.Join(dir, "data.parquet")
		q := fmt.Sprintf("copy (select * from %s) to '%s' (format parquet, compression zstd)", table, strings.ReplaceAll(path, "'", "''"))
		if _, err := sess.DB.ExecContext(ctx, q); err != nil {
			return 0, fmt.Errorf("lake export: %s: %w", table, err)
		}
	}
	return len(tables), nil
}

// lakeDamage explains a failed query by the lake: when a file a run's records reference is missing or
// corrupt, it returns an error naming the file, its table and step and the command that repairs it
// (exit 1); nil when every referenced file is sound (the query itself is at fault).
func lakeDamage(c *cli.Context, lk *lake.Lake, runs []string) error {
	var lines []string
	for _, run := range runs {
		rep, err := lk.Verify(c.Context, run, lake.VerifyOptions{Grace: 24 * time.Hour})
		if err != nil {
			return nil
		}
		for _, p := range rep.Problems {
			if p.Kind == lake.ProblemMissing || p.Kind == lake.ProblemCorrupt {
				lines = append(lines, fmt.Sprintf("%s file %s (table %s, step %d): %s; repair: %s",
					p.Kind, p.Key, p.Partition.Table, p.Partition.Step, p.Detail, repairCommand(c, run, p)))
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return fmt.Errorf("the lake is damaged: %s", strings.Join(lines, "\n  "))
}
