package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/analytics"
	"github.com/spadekit/spade/internal/duck"
	sqlfiles "github.com/spadekit/spade/sql"
)

// embedderFlags are the embedder flags of metrics, ablate and report.
func embedderFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "embedder", Value: "tfidf_lsa", Usage: "embedder for the diversity audit: tfidf_lsa or openai"},
		&cli.StringFlag{Name: "embed-url", EnvVars: []string{"SPADE_EMBED_URL"}, Usage: "openai embedder: the /v1 base URL"},
		&cli.StringFlag{Name: "embed-model", EnvVars: []string{"SPADE_EMBED_MODEL"}, Usage: "openai embedder: the model"},
		&cli.BoolFlag{Name: "no-embed", Usage: "do not compute missing embeddings (diversity columns stay empty)"},
	}
}

// embedderSpec reads the embedder flags but --no-embed.
func embedderSpec(c *cli.Context) analytics.EmbedderSpec {
	return analytics.EmbedderSpec{Kind: c.String("embedder"), BaseURL: c.String("embed-url"),
		Model: c.String("embed-model"), APIKeyEnv: "OPENAI_API_KEY"}
}

// openAnalytics opens the analytics session of a run with embedder spec, computing missing embeddings
// unless noEmbed.
func openAnalytics(ctx context.Context, g globalOptions, spec analytics.EmbedderSpec, noEmbed bool, run string) (*analytics.Session, error) {
	if _, err := spec.Embedder(); err != nil {
		return nil, asUsage(err)
	}
	lk, err := g.openExistingLake(ctx)
	if err != nil {
		return nil, err
	}
	return analytics.OpenEmbedded(ctx, lk, run, spec, !noEmbed)
}

// metricsOptions are the options of `spade metrics`.
type metricsOptions struct {
	globalOptions
	// Format is --format: table, csv or json.
	Format string
	// Model is --model: print this model instead of the dashboard ("" for the dashboard).
	Model string
	// SQLParams is --sql-params: print the run's parameters as SQL and exit.
	SQLParams bool
	// SQL is --sql: print this model's SQL, prefixed with the run's parameters, and exit.
	SQL string
	// Embedder and NoEmbed are the embedder flags.
	Embedder analytics.EmbedderSpec
	NoEmbed  bool
}

func newMetricsCommand() *cli.Command {
	return &cli.Command{
		Name:  "metrics",
		Usage: "print a run's dashboard: learnable band, acceptance, solve rates, regret, Vendi/n, cost per window",
		Description: "Runs the models of sql/ over the run (DuckDB over the lake) with the run's metrics.* and sample.*\n" +
			"settings. The table format also prints the early/late quality audit and the longest repeated-env\n" +
			"streaks; --model NAME prints one model instead (" + fmt.Sprint(analytics.Models()) + ").\n" +
			"Missing embeddings are computed first (TF-IDF + LSA by default) and stored in the embeddings table.\n" +
			"--sql-params prints the run's parameters as SQL, so a model can be run by hand with spade query.\n\n" +
			"Examples: spade --run r1 metrics --format csv --model learnable_band\n" +
			"          spade --run r1 metrics --sql audits | spade --run r1 query --format csv",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "format", Value: "table", Usage: "table, csv or json"},
			&cli.StringFlag{Name: "model", Usage: "print this model instead of the dashboard"},
			&cli.BoolFlag{Name: "sql-params", Usage: "print the run's model parameters as `set variable` statements (to prefix a hand-run sql/ file) and exit"},
			&cli.StringFlag{Name: "sql", Usage: "print MODEL's SQL (embedded in spade), prefixed with the run's parameters, and exit: a script for spade query from any directory"},
		}, embedderFlags()...),
		Action: func(c *cli.Context) error {
			return runMetrics(c.Context, metricsOptions{globalOptions: globalsFrom(c), Format: c.String("format"),
				Model: c.String("model"), SQLParams: c.Bool("sql-params"), SQL: c.String("sql"),
				Embedder: embedderSpec(c), NoEmbed: c.Bool("no-embed")})
		},
	}
}

// runMetrics prints the run's dashboard (or one model, or the SQL of one).
func runMetrics(ctx context.Context, opts metricsOptions) error {
	format := opts.Format
	if err := checkChoice("--format", format, "table", "csv", "json"); err != nil {
		return err
	}
	model := opts.Model
	if model != "" {
		if _, err := sqlfiles.Query(model); err != nil {
			return asUsage(err)
		}
	}
	_, run, cfg, err := opts.openRun(ctx)
	if err != nil {
		return err
	}
	if name := opts.SQL; name != "" {
		body, err := sqlfiles.Query(name)
		if err != nil {
			return asUsage(fmt.Errorf("--sql: %w", err))
		}
		e, err := opts.Embedder.Embedder()
		if err != nil {
			return asUsage(err)
		}
		fmt.Fprintln(opts.Out, analytics.ParamsSQL(cfg, e.Name()))
		fmt.Fprintln(opts.Out, body)
		return nil
	}
	if opts.SQLParams {
		e, err := opts.Embedder.Embedder()
		if err != nil {
			return asUsage(err)
		}
		fmt.Fprintln(opts.Out, analytics.ParamsSQL(cfg, e.Name()))
		return nil
	}
	total := 4
	if format != "table" || model != "" {
		total = 2
	}
	ph := opts.startPhases("metrics", total)
	defer ph.done()
	ph.next("opening the run, computing missing embeddings")
	s, err := openAnalytics(ctx, opts.globalOptions, opts.Embedder, opts.NoEmbed, run)
	if err != nil {
		return err
	}
	defer s.Close()
	w := opts.Out
	if format != "table" {
		query := "select * from dashboard"
		if model != "" {
			query = "select * from " + model
		}
		ph.next(query)
		ph.done()
		return duck.Render(ctx, s.DB, query, format, "", w)
	}
	// The table is for reading: 4 significant digits (analytics.TableValue), "(none)" for an empty one.
	// The queries run first (with progress), then the tables are printed, so a bar never sits
	// between them.
	var queries []string
	if model != "" {
		queries = []string{"select * from " + model}
	} else {
		queries = []string{"select * exclude (run) from dashboard", "select * exclude (run) from audits",
			"select * exclude (run) from repeated_envs limit 5"}
	}
	tables := make([]*analytics.Table, len(queries))
	for i, q := range queries {
		ph.next(q)
		if tables[i], err = analytics.Query(ctx, s.DB, q); err != nil {
			return err
		}
	}
	ph.done()
	show := func(t *analytics.Table) error {
		if len(t.Rows) == 0 {
			fmt.Fprintln(w, "(none)")
			return nil
		}
		return t.Render(w, "table")
	}
	if model != "" {
		return show(tables[0])
	}
	fmt.Fprintf(w, "run %s: dashboard per %d-step window (band [%g, %g], quota %d envs per pool)\n", run,
		s.Config.Metrics.Window, s.Config.Metrics.BandLo, s.Config.Metrics.BandHi, s.Config.Sample.EnvsPerStep)
	if err := show(tables[0]); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nquality audit, early vs late half of the run")
	if err := show(tables[1]); err != nil {
		return err
	}
	fmt.Fprintln(w, "\nlongest runs of repeated environments (same class name or code in consecutive generations)")
	return show(tables[2])
}
