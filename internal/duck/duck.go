// Package duck opens an embedded DuckDB session over a lake: one view per table of the chosen runs
// (unioned, with a `run` column, when there are several), plus `corpus` and `pools`. Queries say `from
// episodes`, never a path. Extensions are never downloaded (autoinstall_known_extensions=false): S3 data is read
// through the lake's verified local cache.
package duck

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	_ "github.com/duckdb/duckdb-go/v2" // registers the "duckdb" database/sql driver

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// Open returns an in-memory DuckDB with extension downloads disabled, no views and no UDFs (the
// session with the models and the vendi UDFs is analytics.OpenRuns).
func Open() (*sql.DB, error) {
	db, err := sql.Open("duckdb", "?autoinstall_known_extensions=false&autoload_known_extensions=false")
	if err != nil {
		return nil, fmt.Errorf("duckdb: %w", err)
	}
	db.SetMaxOpenConns(1) // views and UDFs live in one connection's catalog
	return db, nil
}

// Session is a DuckDB session with views over one or more runs of a lake.
type Session struct {
	DB   *sql.DB
	Runs []string
}

// OpenRuns opens a session with one view per per-run table over the given runs, and a `corpus` view over
// the corpus named by the first run's sample.corpus (empty when none is imported). Each view has a
// leading `run` column and every column of the table's current schema version (NULL in files that predate it).
func OpenRuns(ctx context.Context, lk *lake.Lake, runs ...string) (*Session, error) {
	listings := make(map[string]*lake.RunListing, len(runs))
	for _, run := range runs {
		l, err := lk.ListRun(ctx, run)
		if err != nil {
			return nil, err
		}
		listings[run] = l
	}
	return OpenListed(ctx, lk, listings, runs...)
}

// OpenListed is OpenRuns over listings the caller has made (Lake.ListRun, one per run): the views read
// exactly the files listed, so a caller that also needs the list (spade view locks its sessions down to
// it) lists each run once.
func OpenListed(ctx context.Context, lk *lake.Lake, listings map[string]*lake.RunListing, runs ...string) (*Session, error) {
	for _, run := range runs {
		if listings[run] == nil {
			return nil, fmt.Errorf("duckdb: no listing of run %s", run)
		}
	}
	db, err := Open()
	if err != nil {
		return nil, err
	}
	s := &Session{DB: db, Runs: runs}
	if err := s.createViews(ctx, lk, listings); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// OpenRun is OpenRuns under the name HACKING.md gives it.
func OpenRun(ctx context.Context, lk *lake.Lake, runs ...string) (*Session, error) {
	return OpenRuns(ctx, lk, runs...)
}

// Close closes the session.
func (s *Session) Close() error { return s.DB.Close() }

func (s *Session) createViews(ctx context.Context, lk *lake.Lake, listings map[string]*lake.RunListing) error {
	for _, table := range schemas.RunTables() {
		spec, _ := schemas.Lookup(table)
		var selects []string
		for _, run := range s.Runs {
			if files := listings[run].Files[table]; len(files) > 0 {
				selects = append(selects, fmt.Sprintf("select %s as run, * from %s", quote(run), readParquet(files)))
			}
		}
		// The zero-row select with the table's current columns comes last, so a run whose files all
		// predate a column (a version 1 train_metrics) still has it, as NULL: models can name it.
		body := strings.Join(append(selects, emptySelect(spec.Arrow(), true)), " union all by name ")
		if _, err := s.DB.ExecContext(ctx, fmt.Sprintf("create or replace view %s as %s", table, body)); err != nil {
			return fmt.Errorf("duckdb: view %s: %w", table, err)
		}
	}
	corpusBody := emptySelect(schemas.CorpusSpec.Arrow(), false)
	name, err := s.corpusName(ctx, lk)
	if err != nil {
		return err
	}
	if name != "" {
		files, err := lk.CorpusFiles(ctx, name)
		if err != nil && !errors.Is(err, lake.ErrNotCommitted) {
			return err
		}
		if len(files) > 0 {
			corpusBody = "select * from " + readParquet(files)
		}
	}
	if _, err := s.DB.ExecContext(ctx, "create or replace view corpus as "+corpusBody); err != nil {
		return fmt.Errorf("duckdb: view corpus: %w", err)
	}
	return s.createPoolsView(ctx, lk)
}

// createPoolsView creates the `pools` view: every imported env pool of the lake, with a leading `pool`
// column (its name) and every column of the table's current schema version (NULL in files that predate
// it).
func (s *Session) createPoolsView(ctx context.Context, lk *lake.Lake) error {
	names, err := lk.Pools(ctx)
	if err != nil {
		return err
	}
	var selects []string
	for _, name := range names {
		files, err := lk.PoolFiles(ctx, name)
		if err != nil && !errors.Is(err, lake.ErrNotCommitted) {
			return err
		}
		if len(files) > 0 {
			selects = append(selects, fmt.Sprintf("select %s as pool, * from %s", quote(name), readParquet(files)))
		}
	}
	empty := "select cast(null as varchar) as pool, " + strings.TrimPrefix(emptySelect(schemas.PoolsSpec.Arrow(), false), "select ")
	body := strings.Join(append(selects, empty), " union all by name ")
	if _, err := s.DB.ExecContext(ctx, "create or replace view pools as "+body); err != nil {
		return fmt.Errorf("duckdb: view pools: %w", err)
	}
	return nil
}

// corpusName picks the corpus the `corpus` view shows: the first run's sample.corpus; with no runs, the
// corpus named "default", else the lake's only corpus; else none.
func (s *Session) corpusName(ctx context.Context, lk *lake.Lake) (string, error) {
	if len(s.Runs) > 0 {
		cfg, err := lk.RunConfig(ctx, s.Runs[0])
		if err != nil {
			return "", err
		}
		return cfg.Sample.Corpus, nil
	}
	corpora, err := lk.Corpora(ctx)
	if err != nil {
		return "", err
	}
	for _, c := range corpora {
		if c == "default" {
			return c, nil
		}
	}
	if len(corpora) == 1 {
		return corpora[0], nil
	}
	return "", nil
}

// CorpusView points the `corpus` view at a named corpus of the lake.
func (s *Session) CorpusView(ctx context.Context, lk *lake.Lake, corpus string) error {
	files, err := lk.CorpusFiles(ctx, corpus)
	if err != nil {
		return err
	}
	_, err = s.DB.ExecContext(ctx, "create or replace view corpus as select * from "+readParquet(files))
	return err
}

// readParquet reads the lake's part files. Hive partitioning is off: a local lake's paths contain
// step=NNNNNN but the cache's content-addressed paths do not, and the tables carry their step column
// themselves, so a local and an S3 lake give the same columns. Columns are matched by name, so a table
// whose steps were written under two schema versions (episodes v1 and v2) reads as the newer one, with
// NULL in a column an older file lacks.
func readParquet(files []string) string {
	return "read_parquet(" + fileList(files) + ", hive_partitioning = false, union_by_name = true)"
}

func fileList(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = quote(f)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// ident quotes a column name (some, such as "index" and "return", are SQL keywords).
func ident(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// emptySelect is a zero-row select with the table's columns and types, after a leading run column when
// withRun is set.
func emptySelect(schema *arrow.Schema, withRun bool) string {
	var cols []string
	if withRun {
		cols = append(cols, "cast(null as varchar) as run")
	}
	for _, f := range schema.Fields() {
		cols = append(cols, fmt.Sprintf("cast(null as %s) as %s", SQLType(f.Type), ident(f.Name)))
	}
	return "select " + strings.Join(cols, ", ") + " where false"
}

// SQLType maps an Arrow type of a schemas table to the DuckDB type DuckDB reports for its Parquet column.
func SQLType(t arrow.DataType) string {
	switch t.ID() {
	case arrow.STRING:
		return "VARCHAR"
	case arrow.BOOL:
		return "BOOLEAN"
	case arrow.INT8:
		return "TINYINT"
	case arrow.INT32:
		return "INTEGER"
	case arrow.INT64:
		return "BIGINT"
	case arrow.FLOAT32:
		return "FLOAT"
	case arrow.FLOAT64:
		return "DOUBLE"
	case arrow.BINARY:
		return "BLOB"
	case arrow.LIST:
		return SQLType(t.(*arrow.ListType).Elem()) + "[]"
	}
	return "VARCHAR"
}
