package main

import (
	"context"
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/stages/regret"
)

// ablateOptions are the options of `spade ablate`.
type ablateOptions struct {
	globalOptions
	// Format is --format: table, csv or json; with Table, markdown, csv or latex.
	Format string
	// Table is --table: render the paper's Table 1, 2 or 3 from eval_results instead (0: the comparison).
	Table int
	// Batch is --batch, envs per calibrated batch (0: the smallest run's env count); Draws is --draws,
	// batches per run; Seed is --seed, the subsampling seed.
	Batch, Draws int
	Seed         uint64
	// Rescore is --rescore: rescore one run under every Designer reward variant; Picks is --picks: list
	// every pool's top env per variant.
	Rescore, Picks bool
	// Embedder is the embedder of the diversity columns (embedderFlags).
	Embedder analytics.EmbedderSpec
}

func newAblateCommand() *cli.Command {
	return &cli.Command{
		Name:  "ablate",
		Usage: "compare runs side by side (calibrated Vendi/n, learnable band, acceptance, audits, regret), or rescore one",
		Description: `With several --run flags, one row per run: Vendi/n and mean pairwise cosine distance, each the mean
over --draws seeded batches of --batch envs (default 24, the paper's Table 8 calibration: 24 identical
envs give 1/24, a single-domain batch about 15-16.5 of 24, a whole-run batch about 21.3 of 24; --batch 0:
one subset of the smallest run's env count per draw), the
learnable-band share, acceptance, well-defined and verifiable shares, regret and solve rate.
With --rescore and one --run: recompute the Designer reward of every pool under every variant
(regret_anchor, regret, anchor, ema_lp) from the stored episodes and show which env each ranks top.

With --table 1|2|3: the paper's downstream tables from eval_results (spade eval, spade eval import),
one row per run: Table 1 the eight reasoning suites (AIME 2025/2026, GPQA-Diamond, LiveCodeBench-v6,
Reasoning-Gym Math/Algorithmic/Cognition/Logic), Table 2 the three tool-use suites (BFCL v4 multi-turn,
τ²-bench, ACEBench-Agent), Table 3 the ablation runs on Table 1's suites with each average's difference
from the first run; each with the equal-weight average. Each run shows the checkpoint with the highest
average, an offline choice made on the test suites (marked †). Scores in %; a missing suite is "—" and an
average over fewer suites says (k/n). --format markdown (default), csv or latex; the suite-to-column
mapping is sql/paper_columns.sql.

Examples: spade --run full --run no_memory --run no_corpus ablate
          spade --run full ablate --rescore --picks
          spade --run full --run no_memory --run no_corpus ablate --table 3 --format latex`,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, csv or json; with --table: markdown, csv or latex"},
			&cli.IntFlag{Name: "table", Usage: "render the paper's Table 1 (games), 2 (tools) or 3 (ablations) from eval_results"},
			&cli.IntFlag{Name: "batch", Aliases: []string{"n"}, Value: analytics.DefaultBatch, Usage: "envs per calibrated batch (0: the smallest run's env count)"},
			&cli.IntFlag{Name: "draws", Value: 200, Usage: "batches per run"},
			&cli.Uint64Flag{Name: "seed", Value: 0, Usage: "subsampling seed"},
			&cli.BoolFlag{Name: "rescore", Usage: "rescore one run under every Designer reward variant"},
			&cli.BoolFlag{Name: "picks", Usage: "with --rescore: list every pool's top env per variant"},
		}, embedderFlags()...),
		Action: func(c *cli.Context) error {
			return runAblate(c.Context, ablateOptions{globalOptions: globalsFrom(c), Format: c.String("format"),
				Table: c.Int("table"), Batch: c.Int("batch"), Draws: c.Int("draws"), Seed: c.Uint64("seed"), Rescore: c.Bool("rescore"),
				Picks: c.Bool("picks"), Embedder: embedderSpec(c)})
		},
	}
}

// runAblate prints the comparison of the --run runs, or with opts.Rescore the rescoring of one run.
func runAblate(ctx context.Context, opts ablateOptions) error {
	if opts.Table != 0 {
		return runPaperTable(ctx, opts)
	}
	format := opts.Format
	if err := checkChoice("--format", format, "table", "csv", "json"); err != nil {
		return err
	}
	if opts.Rescore {
		return runRescore(ctx, opts)
	}
	runs := opts.Runs
	if len(runs) < 1 {
		return usageError("name the runs to compare: --run A --run B ...")
	}
	lk, err := opts.openExistingLake(ctx)
	if err != nil {
		return err
	}
	for _, r := range runs {
		if _, err := lk.RunConfig(ctx, r); err != nil {
			return asUsage(err)
		}
	}
	if _, err := opts.Embedder.Embedder(); err != nil {
		return asUsage(err)
	}
	ph := opts.startPhases("ablate", 1+len(runs)) // the embeddings, then one phase per run
	t, err := analytics.Compare(ctx, lk, runs, analytics.CompareOptions{Embedder: opts.Embedder, Batch: opts.Batch,
		Draws: opts.Draws, Seed: opts.Seed, Progress: ph.next})
	ph.done()
	if err != nil {
		return err
	}
	if err := analytics.AddEvalColumns(ctx, lk, t, runs); err != nil {
		return err
	}
	return t.Render(opts.Out, format)
}

// runPaperTable prints the paper's table opts.Table over the --run runs (analytics.LoadPaperTable).
func runPaperTable(ctx context.Context, opts ablateOptions) error {
	if err := checkChoice("--table", strconv.Itoa(opts.Table), "1", "2", "3"); err != nil {
		return err
	}
	format := opts.Format
	if format == "table" { // the flag's default: the comparison's format, markdown for a paper table
		format = "markdown"
	}
	if err := checkChoice("--format", format, analytics.PaperFormats...); err != nil {
		return err
	}
	if opts.Rescore {
		return usageError("--table and --rescore are two different reports: pick one")
	}
	if len(opts.Runs) < 1 {
		return usageError("name the runs, one row each: --run A --run B ...")
	}
	lk, err := opts.openExistingLake(ctx)
	if err != nil {
		return err
	}
	for _, r := range opts.Runs {
		if err := opts.checkRun(ctx, lk, r); err != nil {
			return err
		}
	}
	t, err := analytics.LoadPaperTable(ctx, lk, opts.Runs, opts.Table)
	if err != nil {
		return err
	}
	return t.Render(opts.Out, format)
}

// runRescore runs analytics.Rescore with the regret stage's formulas on the single --run.
func runRescore(ctx context.Context, opts ablateOptions) error {
	lk, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	p, err := regret.ParamsFrom(cfg)
	if err != nil {
		return asUsage(err)
	}
	scorer := regret.NewPoolScorer(p)
	ph := opts.startPhases("ablate", 1)
	ph.next("rescoring every pool with each reward variant")
	picks, err := analytics.Rescore(ctx, lk, run, scorer)
	ph.done()
	if err != nil {
		return err
	}
	if opts.Picks {
		return analytics.PicksTable(picks).Render(opts.Out, opts.Format)
	}
	if opts.Format == "table" {
		fmt.Fprintf(opts.Out, "run %s: each variant's top-ranked env per pool (deployed: %s; band [%g, %g])\n",
			run, scorer.Variants()[0], cfg.Metrics.BandLo, cfg.Metrics.BandHi)
	}
	return analytics.RescoreSummary(picks, scorer.Variants(), cfg.Metrics.BandLo, cfg.Metrics.BandHi).Render(opts.Out, opts.Format)
}
