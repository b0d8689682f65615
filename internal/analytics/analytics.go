// Package analytics runs the paper's audits (the models of sql/) over a run's tables in DuckDB and
// assembles what `spade metrics`, `spade ablate` and `spade report` show: the per-window dashboard, the
// early/late quality audit, the sample-size-calibrated Vendi comparison and the Designer-reward rescoring.
//
// Every number comes from SQL over the lake: this package only sets the run's parameters as DuckDB
// variables, creates one view per model (so a model can read another, like dbt's ref()), and runs them.
package analytics

import (
	"context"
	"database/sql"
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/vendi"
	sqlfiles "github.com/spadekit/spade/sql"
)

// DefaultEmbedder is the embedder whose vectors the diversity models read unless told otherwise.
const DefaultEmbedder = "tfidf_lsa"

// Session is a DuckDB session over one run with the run's parameters set and the models as views.
type Session struct {
	*duck.Session
	// Run is the run's name.
	Run string
	// Config is the run's configuration.
	Config   *config.Config
	embedder string
}

// EmbedderName is the embedder whose vectors the session's diversity models read.
func (s *Session) EmbedderName() string { return s.embedder }

// OpenRuns is the one function that builds a DuckDB session for reading runs: duck.OpenRuns's table
// views over runs, the vendi UDFs (vendi.Register) and the models of sql/ as views (modelViews). Every
// session over runs that shows the models (`spade query`, metrics, the report, the viewer) is made here.
func OpenRuns(ctx context.Context, lk *lake.Lake, runs ...string) (*duck.Session, error) {
	s, err := duck.OpenRuns(ctx, lk, runs...)
	if err != nil {
		return nil, err
	}
	return withModels(ctx, lk, s)
}

// OpenListed is OpenRuns over listings the caller has made (duck.OpenListed).
func OpenListed(ctx context.Context, lk *lake.Lake, listings map[string]*lake.RunListing, runs ...string) (*duck.Session, error) {
	s, err := duck.OpenListed(ctx, lk, listings, runs...)
	if err != nil {
		return nil, err
	}
	return withModels(ctx, lk, s)
}

// OpenDB is duck.Open with the vendi UDFs registered: a session without views.
func OpenDB() (*sql.DB, error) {
	db, err := duck.Open()
	if err != nil {
		return nil, err
	}
	if err := vendi.Register(db); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// withModels registers the vendi UDFs and the models on s, closing it on an error.
func withModels(ctx context.Context, lk *lake.Lake, s *duck.Session) (*duck.Session, error) {
	if err := vendi.Register(s.DB); err != nil {
		s.Close()
		return nil, err
	}
	if err := modelViews(ctx, lk, s); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// modelViews gives a session over runs the models of sql/ as views, with the first run's parameters set as DuckDB variables (default
// embedder): `spade --run r1 query "select * from learnable_band"` computes what `spade metrics` shows.
// With several runs, each model still computes per run, but with the first run's parameters (window,
// band, quota); with none, the models' defaults (the paper's settings) apply.
func modelViews(ctx context.Context, lk *lake.Lake, s *duck.Session) error {
	if len(s.Runs) > 0 {
		cfg, err := lk.RunConfig(ctx, s.Runs[0])
		if err != nil {
			return err
		}
		if err := SetParams(ctx, s.DB, cfg, ""); err != nil {
			return err
		}
	}
	return CreateModelViews(ctx, s.DB)
}

// Open opens a session over one run: a view per table (duck.OpenRuns), the run's parameters as DuckDB
// variables (SetParams), and a view per model of sql/ named after its file (CreateModelViews, through the
// modelViews hook of duck.OpenRuns).
func Open(ctx context.Context, lk *lake.Lake, run, embedder string) (*Session, error) {
	return open(ctx, lk, run, embedder, false)
}

// OpenCached is Open with the run's episodes (the columns the models read) loaded once into a temporary
// table that shadows the view: a dashboard reads episodes in five models, and each read of the view opens
// every step's file again.
// Worth it when several models run in one session (spade metrics, report); the cost moves to the open.
func OpenCached(ctx context.Context, lk *lake.Lake, run, embedder string) (*Session, error) {
	return open(ctx, lk, run, embedder, true)
}

// cachedEpisodes keeps the episodes columns the models read (not the long text ones: episode_id, error).
const cachedEpisodes = `create temp table episodes as select run, step, pool_step, env_id, skill, hinted, "index",
	seed, success, "return", turns, ended_by, tokens, env_cpu_seconds from main.episodes`

func open(ctx context.Context, lk *lake.Lake, run, embedder string, cache bool) (*Session, error) {
	cfg, err := lk.RunConfig(ctx, run)
	if err != nil {
		return nil, err
	}
	ds, err := OpenRuns(ctx, lk, run)
	if err != nil {
		return nil, err
	}
	if embedder == "" {
		embedder = DefaultEmbedder
	}
	s := &Session{Session: ds, Run: run, Config: cfg, embedder: embedder}
	if cache {
		// Temp objects come first in DuckDB's search path, so the models bind to the table.
		if _, err := ds.DB.ExecContext(ctx, cachedEpisodes); err != nil {
			ds.Close()
			return nil, fmt.Errorf("analytics: cache episodes: %w", err)
		}
	}
	// The modelViews hook created the model views and set the parameters with the default embedder.
	if err := SetParams(ctx, ds.DB, cfg, embedder); err != nil {
		ds.Close()
		return nil, err
	}
	return s, nil
}

// Params returns the DuckDB variables the models read, from a run's configuration: metrics_band_lo,
// metrics_band_hi, metrics_window, sample_envs_per_step, sample_refresh_every, outcome_exclude_ended_by,
// outcome_value and embedder.
func Params(cfg *config.Config, embedder string) map[string]any {
	if embedder == "" {
		embedder = DefaultEmbedder
	}
	return map[string]any{
		"metrics_band_lo":      cfg.Metrics.BandLo,
		"metrics_band_hi":      cfg.Metrics.BandHi,
		"metrics_window":       int64(cfg.Metrics.Window),
		"sample_envs_per_step": int64(cfg.Sample.EnvsPerStep),
		"sample_refresh_every": int64(cfg.Sample.RefreshEvery),
		// outcome.*: which episodes count and what their outcome is (episode_outcomes.sql), the settings
		// the Designer's reward reads through internal/outcome.
		"outcome_exclude_ended_by": cfg.Outcome.ExcludeEndedBy,
		"outcome_value":            string(cfg.Outcome.Value),
		"embedder":                 embedder,
	}
}

// SetParams sets the models' parameters (Params) as DuckDB variables of the session.
func SetParams(ctx context.Context, db *sql.DB, cfg *config.Config, embedder string) error {
	for _, stmt := range paramStatements(cfg, embedder) {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("analytics: %s: %w", stmt, err)
		}
	}
	return nil
}

// ParamsSQL returns the parameters as `set variable` statements, one per line, each ending with ';':
// prefixed to a model's file, they make `spade query` compute what `spade metrics` does.
func ParamsSQL(cfg *config.Config, embedder string) string {
	return strings.Join(paramStatements(cfg, embedder), ";\n") + ";"
}

func paramStatements(cfg *config.Config, embedder string) []string {
	params := Params(cfg, embedder)
	names := make([]string, 0, len(params))
	for name := range params {
		names = append(names, name)
	}
	sort.Strings(names)
	var out []string
	for _, name := range names {
		var literal string
		switch v := params[name].(type) {
		case string:
			literal = "'" + strings.ReplaceAll(v, "'", "''") + "'"
		case float64:
			literal = fmt.Sprintf("%v::double", v)
		default:
			literal = fmt.Sprintf("%v", v)
		}
		out = append(out, fmt.Sprintf("set variable %s = %s", name, literal))
	}
	return out
}

// viewOrder lists the models created as views, dependencies first (dashboard reads the others).
// tfidf is not a view: it reads `documents`, which the embedder creates.
var viewOrder = []string{"episode_outcomes", "env_outcomes", "learnable_band", "solve_rates", "regret_curve", "acceptance", "gate_failures", "gate_contradictions",
	"repeated_envs", "audits", "cost", "left_out", "vendi_by_window", "dashboard", "eval_scores", "paper_columns", "paper_tables"}

// Models returns the models a session has as views, in dependency order.
func Models() []string { return append([]string(nil), viewOrder...) }

// CreateModelViews creates one view per model, named after its file: `select * from learnable_band`.
func CreateModelViews(ctx context.Context, db *sql.DB) error {
	for _, name := range viewOrder {
		text, err := sqlfiles.Query(name)
		if err != nil {
			return err
		}
		body := strings.TrimRight(strings.TrimSpace(text), ";")
		if _, err := db.ExecContext(ctx, fmt.Sprintf("create or replace temp view %s as %s", name, body)); err != nil {
			return fmt.Errorf("analytics: model %s: %w", name, err)
		}
	}
	return nil
}

// Table is a query result held in memory.
type Table struct {
	// Columns are the result's column names.
	Columns []string
	// Rows hold the values as the driver returns them (int64, float64, string, bool, nil, ...).
	Rows [][]any
}

// Col returns the index of a column, or -1.
func (t *Table) Col(name string) int {
	for i, c := range t.Columns {
		if c == name {
			return i
		}
	}
	return -1
}

// Float returns row i's column as a float64 (0 for NULL or a non-number).
func (t *Table) Float(i int, column string) float64 {
	j := t.Col(column)
	if j < 0 {
		return 0
	}
	switch v := t.Rows[i][j].(type) {
	case float64:
		return v
	case float32:
		return float64(v)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case int:
		return float64(v)
	case *big.Int: // DuckDB's HUGEINT, e.g. sum() of BIGINT
		f, _ := new(big.Float).SetInt(v).Float64()
		return f
	case bool:
		if v {
			return 1
		}
	}
	return 0
}

// String returns row i's column as text ("" for NULL).
func (t *Table) String(i int, column string) string {
	j := t.Col(column)
	if j < 0 || t.Rows[i][j] == nil {
		return ""
	}
	return duck.FormatValue(t.Rows[i][j])
}

// Query runs SQL and returns its result in memory.
func Query(ctx context.Context, db *sql.DB, query string, args ...any) (*Table, error) {
	cols, rows, _, err := duck.QueryRows(ctx, db, 0, query, args...)
	if err != nil {
		return nil, err
	}
	return &Table{Columns: cols, Rows: rows}, nil
}

// Model runs one model of the session: `select * from <name>`.
func (s *Session) Model(ctx context.Context, name string) (*Table, error) {
	if _, err := sqlfiles.Query(name); err != nil {
		return nil, err
	}
	t, err := Query(ctx, s.DB, "select * from "+name)
	if err != nil {
		return nil, fmt.Errorf("analytics: %s on run %s: %w", name, s.Run, err)
	}
	return t, nil
}
