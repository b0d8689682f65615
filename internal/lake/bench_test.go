package lake_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// writeBenchFixture is built once per test binary (the harness calls a benchmark more than once): the
// rows, a local lake, and a DuckDB holding the same rows in a table.
type writeBenchFixture struct {
	rows  []schemas.TurnRow
	lk    *lake.Lake
	db    *sql.DB
	steps *atomic.Int64
}

var (
	writeBenchOnce sync.Once
	writeBench     writeBenchFixture
	writeBenchErr  error
)

func newWriteBench(ctx context.Context) (writeBenchFixture, error) {
	const n = 1_000_000
	rows := turnRows(n, 42, "")
	dir, err := os.MkdirTemp("", "spade-bench-")
	if err != nil {
		return writeBenchFixture{}, err
	}
	benchDirs = append(benchDirs, dir)
	lk, err := lake.Open(ctx, filepath.Join(dir, "lake"))
	if err != nil {
		return writeBenchFixture{}, err
	}
	// Load the same rows into a DuckDB table (untimed) from a partition of ours.
	seed := lake.PartitionKey{Run: "bench", Table: "turns", Step: 0}
	if _, err := commit(ctx, lk, seed, rows, lake.WriteOptions{}, false); err != nil {
		return writeBenchFixture{}, err
	}
	files, err := lk.LocalFiles(ctx, "bench", "turns")
	if err != nil {
		return writeBenchFixture{}, err
	}
	db, err := duck.Open()
	if err != nil {
		return writeBenchFixture{}, err
	}
	list := ""
	for i, f := range files {
		if i > 0 {
			list += ", "
		}
		list += "'" + f + "'"
	}
	if _, err := db.ExecContext(ctx, "create table turns_mem as select * from read_parquet(["+list+"], hive_partitioning = false)"); err != nil {
		return writeBenchFixture{}, err
	}
	return writeBenchFixture{rows: rows, lk: lk, db: db, steps: new(atomic.Int64)}, nil
}

// BenchmarkWriteTurns1M writes 1,000,000 turns rows (about 200 bytes each) as a typed, validated, local
// partition, and in the same benchmark has DuckDB write the same rows with its own
// COPY (...) TO (FORMAT parquet, COMPRESSION zstd). It reports both times and their ratio (target: ours
// within 2x of DuckDB's).
func BenchmarkWriteTurns1M(b *testing.B) {
	ctx := context.Background()
	writeBenchOnce.Do(func() { writeBench, writeBenchErr = newWriteBench(ctx) })
	if writeBenchErr != nil {
		b.Fatal(writeBenchErr)
	}
	rows, lk, db, dir := writeBench.rows, writeBench.lk, writeBench.db, b.TempDir()
	steps := writeBench.steps
	var ours, theirs time.Duration
	var bytesOurs int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := commit(ctx, lk, lake.PartitionKey{Run: "bench", Table: "turns", Step: steps.Add(1)}, rows, lake.WriteOptions{}, false)
		if err != nil {
			b.Fatal(err)
		}
		ours += time.Since(start)
		bytesOurs = res.Bytes

		out := filepath.Join(dir, fmt.Sprintf("duck-%d.parquet", i))
		start = time.Now()
		if _, err := db.ExecContext(ctx, "copy (select * from turns_mem) to '"+out+"' (format parquet, compression zstd)"); err != nil {
			b.Fatal(err)
		}
		theirs += time.Since(start)
		if st, err := os.Stat(out); err == nil && i == 0 {
			b.ReportMetric(float64(st.Size())/1e6, "duckdb-MB")
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(ours.Milliseconds())/float64(b.N), "spade-ms/op")
	b.ReportMetric(float64(theirs.Milliseconds())/float64(b.N), "duckdb-ms/op")
	b.ReportMetric(float64(ours)/float64(theirs), "spade/duckdb")
	b.ReportMetric(float64(bytesOurs)/1e6, "spade-MB")
}
