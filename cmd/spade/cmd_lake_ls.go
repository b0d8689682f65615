package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/lake"
)

func newLakeLsCommand() *cli.Command {
	return &cli.Command{
		Name:  "ls",
		Usage: "list runs, tables and committed partitions with rows and bytes",
		Description: "Only committed partitions (with a manifest) are listed; a run with none shows one line of dashes.\n" +
			"With --run, only those runs (and every corpus). Under the table, each run with orphaned objects (a\n" +
			"killed or losing writer's parts, older than an hour) gets a line saying how many and that `spade lake\n" +
			"vacuum` removes them. Corpora and benchmarks follow the runs, each line naming which it is. With\n" +
			"--summary, one line per run (its tables, partitions, steps, files, rows and bytes), then one per corpus\n" +
			"and benchmark. A lake path that holds no lake is an error (exit 2) and nothing is created there.\n\n" +
			"Example: spade --lake s3://bucket/spade lake ls --summary",
		Flags: []cli.Flag{
			&cli.BoolFlag{Name: "summary", Usage: "one line per run, corpus and benchmark instead of one per partition"},
		},
		Action: func(c *cli.Context) error {
			return runLakeLs(c.Context, globalsFrom(c), c.Bool("summary"))
		},
	}
}

// runLakeLs lists the committed partitions of the --run runs (or every run) and every corpus and
// benchmark (with summary, one line for each run), then the runs with orphaned objects.
func runLakeLs(ctx context.Context, opts globalOptions, summary bool) error {
	lk, runs, err := opts.openLakeRuns(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	if summary {
		fmt.Fprintln(w, "RUN\tTABLES\tPARTITIONS\tSTEPS\tFILES\tROWS\tBYTES")
	} else {
		fmt.Fprintln(w, "RUN\tTABLE\tSTEP\tFILES\tROWS\tBYTES\tFRAGMENT")
	}
	for _, run := range runs {
		parts, err := lk.Partitions(ctx, run, "")
		if err != nil {
			return err
		}
		if summary {
			fmt.Fprintln(w, summaryLine(run, parts))
			continue
		}
		if len(parts) == 0 {
			fmt.Fprintf(w, "%s\t-\t-\t0\t0\t0\n", run) // a run with nothing committed yet
		}
		for _, p := range parts {
			fragment := p.Key.Fragment // one writer's part of the step (llm_calls of generate, gate, rollout)
			if fragment == "" {
				fragment = "-"
			}
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%s\n", run, p.Key.Table, p.Key.Step, len(p.Manifest.Files), p.Manifest.Rows, p.Manifest.Bytes, fragment)
		}
	}
	corpora, err := lk.Corpora(ctx)
	if err != nil {
		return err
	}
	for _, name := range corpora {
		m, err := lk.Manifest(ctx, lake.CorpusKey(name))
		if err != nil {
			return err
		}
		if summary {
			fmt.Fprintf(w, "(corpus %s)\t1\t1\t-\t%d\t%d\t%d\n", name, len(m.Files), m.Rows, m.Bytes)
		} else {
			fmt.Fprintf(w, "(corpus %s)\tcorpus\t0\t%d\t%d\t%d\n", name, len(m.Files), m.Rows, m.Bytes)
		}
	}
	benches, err := lk.Benches(ctx)
	if err != nil {
		return err
	}
	for _, name := range benches {
		m, err := lk.Manifest(ctx, lake.BenchKey(name))
		if err != nil {
			return err
		}
		if summary {
			fmt.Fprintf(w, "(bench %s)\t1\t1\t-\t%d\t%d\t%d\n", name, len(m.Files), m.Rows, m.Bytes)
		} else {
			fmt.Fprintf(w, "(bench %s)\tbench_items\t0\t%d\t%d\t%d\n", name, len(m.Files), m.Rows, m.Bytes)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	// Orphans: sizes only (no hashing), so the listing stays cheap; `lake verify` hashes.
	for _, run := range runs {
		rep, err := lk.Verify(ctx, run, lake.VerifyOptions{Grace: time.Hour, SkipHash: true})
		if err != nil {
			return err
		}
		orphans := 0
		for _, p := range rep.Problems {
			if p.Kind == lake.ProblemOrphan || p.Kind == lake.ProblemTemporary {
				orphans++
			}
		}
		if orphans > 0 {
			fmt.Fprintf(opts.Out, "run %s: %d orphaned objects that no commit references (%s removes them)\n", run, orphans, opts.command("--run", run, "lake", "vacuum"))
		}
	}
	return nil
}

// summaryLine is a run's line of `lake ls --summary`: how many tables and partitions it has committed,
// the steps they cover (in the --steps grammar), and their files, rows and bytes together.
func summaryLine(run string, parts []lake.Partition) string {
	tables := map[string]bool{}
	var steps []int64
	var files int
	var rows, bytes int64
	for _, p := range parts {
		tables[p.Key.Table] = true
		steps = append(steps, p.Key.Step)
		files += len(p.Manifest.Files)
		rows += p.Manifest.Rows
		bytes += p.Manifest.Bytes
	}
	stepText := "-"
	if len(steps) > 0 {
		stepText = stepRanges(steps)
	}
	return fmt.Sprintf("%s\t%d\t%d\t%s\t%d\t%d\t%d", run, len(tables), len(parts), stepText, files, rows, bytes)
}

// stepRanges writes steps (any order, repeats allowed) in the --steps grammar: ascending, consecutive
// steps as one inclusive range ("0-3,8,10-11").
func stepRanges(steps []int64) string {
	steps = slices.Compact(slices.Sorted(slices.Values(steps)))
	var out []string
	for i := 0; i < len(steps); {
		j := i
		for j+1 < len(steps) && steps[j+1] == steps[j]+1 {
			j++
		}
		if j == i {
			out = append(out, strconv.FormatInt(steps[i], 10))
		} else {
			out = append(out, fmt.Sprintf("%d-%d", steps[i], steps[j]))
		}
		i = j + 1
	}
	return strings.Join(out, ",")
}
