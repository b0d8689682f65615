package main

import (
	"context"
	"fmt"
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
			"vacuum` removes them. A lake path that does not exist is an error (exit 2).\n\n" +
			"Example: spade --lake s3://bucket/spade lake ls",
		Action: func(c *cli.Context) error {
			return runLakeLs(c.Context, globalsFrom(c))
		},
	}
}

// runLakeLs lists the committed partitions of the --run runs (or every run) and every corpus, then the
// runs with orphaned objects.
func runLakeLs(ctx context.Context, opts globalOptions) error {
	lk, runs, err := opts.openLakeRuns(ctx)
	if err != nil {
		return err
	}
	w := tabwriter.NewWriter(opts.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RUN\tTABLE\tSTEP\tFILES\tROWS\tBYTES\tFRAGMENT")
	for _, run := range runs {
		parts, err := lk.Partitions(ctx, run, "")
		if err != nil {
			return err
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
		fmt.Fprintf(w, "(corpus %s)\tcorpus\t0\t%d\t%d\t%d\n", name, len(m.Files), m.Rows, m.Bytes)
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
		fmt.Fprintf(w, "(bench %s)\tbench_items\t0\t%d\t%d\t%d\n", name, len(m.Files), m.Rows, m.Bytes)
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
			fmt.Fprintf(opts.Out, "run %s: %d orphaned objects that no commit references (spade --run %s lake vacuum removes them)\n", run, orphans, run)
		}
	}
	return nil
}
