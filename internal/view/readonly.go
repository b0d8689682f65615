package view

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// ErrNotReadOnly marks console SQL refused because it is not a single read-only query.
var ErrNotReadOnly = errors.New("only a single SELECT, WITH, FROM, DESCRIBE or SHOW query is allowed")

// lockDown makes a session's database refuse to touch anything but the runs' own Parquet files (files,
// from lakeFiles): it sets them as DuckDB's allowed_paths, turns enable_external_access off (no other file read or written, no
// COPY TO, ATTACH, INSTALL/LOAD or getenv) and locks the configuration so no query can undo it. It runs
// after the session's views exist; the views read only the listed files.
func lockDown(ctx context.Context, db *sql.DB, files []string) error {
	stmts := []string{"set allowed_paths = " + literalList(files), "set enable_external_access = false",
		"set lock_configuration = true"}
	for _, stmt := range stmts {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("view: lock the session down: %s: %w", strings.SplitN(stmt, "=", 2)[0], err)
		}
	}
	return nil
}

// lakeFiles returns the Parquet files a session over runs reads: every table of the runs (from their
// listings) and the corpus. The list is also the session's fingerprint: a new commit, or a forced one,
// changes it.
func lakeFiles(ctx context.Context, lk *lake.Lake, runs []string, listings map[string]*lake.RunListing, corpus string) ([]string, error) {
	var files []string
	for _, run := range runs {
		for _, table := range schemas.RunTables() {
			files = append(files, listings[run].Files[table]...)
		}
	}
	if corpus != "" {
		f, err := lk.CorpusFiles(ctx, corpus)
		if err != nil && !errors.Is(err, lake.ErrNotCommitted) {
			return nil, err
		}
		files = append(files, f...)
	}
	return files, nil
}

// readOnlyQuery checks console SQL with DuckDB's own parser: json_serialize_sql serializes SELECT
// statements only (DESCRIBE, SHOW, FROM-first and WITH queries parse as SELECTs), so COPY, ATTACH,
// INSTALL, LOAD, SET, PRAGMA, CREATE, INSERT and the like are refused, as is more than one statement.
// It returns the query without a trailing semicolon.
func readOnlyQuery(ctx context.Context, db *sql.DB, query string) (string, error) {
	query = strings.TrimSpace(query)
	for strings.HasSuffix(query, ";") {
		query = strings.TrimSpace(strings.TrimSuffix(query, ";"))
	}
	if query == "" {
		return "", fmt.Errorf("%w: the SQL is empty", ErrNotReadOnly)
	}
	var serialized string
	if err := db.QueryRowContext(ctx, "select json_serialize_sql("+lit(query)+")::varchar").Scan(&serialized); err != nil {
		return "", fmt.Errorf("%w: %w", errBadSQL, err)
	}
	var parsed struct {
		Error        bool              `json:"error"`
		ErrorType    string            `json:"error_type"`
		ErrorMessage string            `json:"error_message"`
		Statements   []json.RawMessage `json:"statements"`
	}
	if err := json.Unmarshal([]byte(serialized), &parsed); err != nil {
		return "", fmt.Errorf("view: parse the SQL: %w", err)
	}
	switch {
	case parsed.Error && parsed.ErrorType == "not implemented":
		// (DuckDB's message here says only that it serializes SELECT statements)
		return "", fmt.Errorf("%w: %s is not a query that only reads", ErrNotReadOnly, statementKind(query))
	case parsed.Error:
		return "", fmt.Errorf("%w: %s", errBadSQL, parsed.ErrorMessage) // a syntax error: DuckDB's message says where
	case len(parsed.Statements) != 1:
		return "", fmt.Errorf("%w: got %d statements", ErrNotReadOnly, len(parsed.Statements))
	}
	return query, nil
}

// statementKind is the first word of a statement, upper-cased (COPY, ATTACH, ...), for a refusal.
func statementKind(query string) string {
	if fields := strings.Fields(query); len(fields) > 0 {
		return strings.ToUpper(strings.TrimRight(fields[0], "(;"))
	}
	return "the statement"
}

// lit quotes a string as a SQL literal.
func lit(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func literalList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = lit(s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
