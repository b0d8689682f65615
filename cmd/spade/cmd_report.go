package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/report"
)

// reportOptions are the options of `spade report`.
type reportOptions struct {
	globalOptions
	// OutFile is --out, the HTML file to write.
	OutFile string
	// Embedder and NoEmbed are the embedder flags.
	Embedder analytics.EmbedderSpec
	NoEmbed  bool
}

func newReportCommand() *cli.Command {
	return &cli.Command{
		Name:  "report",
		Usage: "write a run's analytics as one self-contained HTML file (inline SVG charts, no network)",
		Description: "Charts: learnable-band share by window (Figure 6), hint regret over steps (Figure 12 right), gate\n" +
			"acceptance and failures by check, Vendi/n by window (Table 8), reward levels and formula disclosure\n" +
			"early vs late (Figure 8 and the §3.4 audit), and cost per step; then the audit table. Missing\n" +
			"embeddings are computed first, as in `spade metrics`.\n\n" +
			"Example: spade --run r1 report --out report.html",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "out", Value: "report.html", Usage: "the HTML file to write"},
		}, embedderFlags()...),
		Action: func(c *cli.Context) error {
			return runReport(c.Context, reportOptions{globalOptions: globalsFrom(c), OutFile: c.String("out"),
				Embedder: embedderSpec(c), NoEmbed: c.Bool("no-embed")})
		},
	}
}

// runReport writes the run's report to opts.OutFile.
func runReport(ctx context.Context, opts reportOptions) error {
	_, run, _, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	ph := opts.startPhases("report", 2)
	ph.next("opening the run, computing missing embeddings")
	s, err := openAnalytics(ctx, opts.globalOptions, opts.Embedder, opts.NoEmbed, run)
	if err != nil {
		ph.done()
		return err
	}
	defer s.Close()
	ph.next("running the models and drawing the charts")
	page, err := report.Build(ctx, s)
	ph.done()
	if err != nil {
		return err
	}
	if err := os.WriteFile(opts.OutFile, page, 0o644); err != nil {
		return asUsage(fmt.Errorf("--out: %w", err))
	}
	fmt.Fprintf(opts.Out, "wrote %s (%d bytes)\n", opts.OutFile, len(page))
	return nil
}
