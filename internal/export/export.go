// Package export writes a run's committed rows out of the lake as plain Parquet files, one per table,
// that any engine reads with a glob: no manifests, commit records or orphaned parts to know about.
package export

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// ErrNotEmpty is wrapped by Run's error when the destination directory already holds something.
var ErrNotEmpty = errors.New("exists and is not empty")

// Run writes every table of run (schemas.RunTables, in name order) to dest/<table>/data.parquet and
// returns the tables written. Each file holds exactly the rows `spade query` sees (the committed
// partitions, through duck's views): a leading `run` column, `step` a BIGINT column, zstd-compressed.
// A table with no rows gets a file with its columns and no rows. dest must not exist or be empty (an
// error wrapping ErrNotEmpty, nothing written); it is created. On any other error the tables written so
// far stay in dest. Errors start with "export: ".
func Run(ctx context.Context, lk *lake.Lake, run, dest string) ([]string, error) {
	if entries, err := os.ReadDir(dest); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("export: %s %w: pick a new directory", dest, ErrNotEmpty)
	}
	sess, err := duck.OpenRuns(ctx, lk, run)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	defer sess.Close()
	tables := schemas.RunTables()
	sort.Strings(tables)
	for _, table := range tables {
		dir := filepath.Join(dest, table)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("export: %w", err)
		}
		path := filepath.Join(dir, "data.parquet")
		q := fmt.Sprintf("copy (select * from %s) to '%s' (format parquet, compression zstd)", table, strings.ReplaceAll(path, "'", "''"))
		if _, err := sess.DB.ExecContext(ctx, q); err != nil {
			return nil, fmt.Errorf("export: %s: %w", table, err)
		}
	}
	return tables, nil
}
