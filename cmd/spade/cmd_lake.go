package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/urfave/cli/v2"
)

func init() {
	register(&cli.Command{
		Name:  "lake",
		Usage: "inspect the lake",
		Subcommands: []*cli.Command{{
			Name:  "ls",
			Usage: "list runs, tables and committed partitions with rows and bytes",
			Description: "Only committed partitions (with a manifest) are listed; a run with none shows one line of dashes.\n" +
				"With --run, only those runs (and every corpus).\n\nExample: spade --lake s3://bucket/spade lake ls",
			Action: func(c *cli.Context) error {
				lk, err := openLake(c)
				if err != nil {
					return err
				}
				runs := runFlags(c)
				if len(runs) == 0 {
					if runs, err = lk.Runs(c.Context); err != nil {
						return err
					}
				}
				w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
				fmt.Fprintln(w, "RUN\tTABLE\tSTEP\tFILES\tROWS\tBYTES\tFRAGMENT")
				for _, run := range runs {
					parts, err := lk.Partitions(c.Context, run, "")
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
				corpora, err := lk.Corpora(c.Context)
				if err != nil {
					return err
				}
				for _, name := range corpora {
					key := corpusKey(name)
					m, err := lk.Manifest(c.Context, key)
					if err != nil {
						return err
					}
					fmt.Fprintf(w, "(corpus %s)\tcorpus\t0\t%d\t%d\t%d\n", name, len(m.Files), m.Rows, m.Bytes)
				}
				return w.Flush()
			},
		}},
	})
}
