package main

import (
	"fmt"
	"os"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/report"
)

func init() {
	register(&cli.Command{
		Name:  "report",
		Usage: "write a run's analytics as one self-contained HTML file (inline SVG charts, no network)",
		Description: "Charts: learnable-band share by window (Figure 6), hint regret over steps (Figure 12 right), gate\n" +
			"acceptance and failures by check, Vendi/n by window (Table 8), reward levels and formula disclosure\n" +
			"early vs late (Figure 8 and the §3.4 audit), and cost per step; then the audit table. Missing\n" +
			"embeddings are computed first, as in `spade metrics`.\n\n" +
			"Example: spade --run r1 report --out report.html",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "out", Value: "report.html", Usage: "the HTML file to write"},
		}, embedderFlags...),
		Action: func(c *cli.Context) error {
			_, run, _, err := openRun(c)
			if err != nil {
				return err
			}
			ph := startPhases("report", 2)
			ph.next("opening the run, computing missing embeddings")
			s, err := openAnalytics(c, run)
			if err != nil {
				ph.done()
				return err
			}
			defer s.Close()
			ph.next("running the models and drawing the charts")
			page, err := report.Build(c.Context, s)
			ph.done()
			if err != nil {
				return err
			}
			if err := os.WriteFile(c.String("out"), page, 0o644); err != nil {
				return asUsage(fmt.Errorf("--out: %w", err))
			}
			fmt.Fprintf(c.App.Writer, "wrote %s (%d bytes)\n", c.String("out"), len(page))
			return nil
		},
	})
}
