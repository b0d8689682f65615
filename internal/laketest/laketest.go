// Package laketest builds the lakes and runs that tests start from: a local lake in the test's temporary
// directory, a run with a given configuration, committed partitions. Every helper fails the test (with
// t.Fatalf) on an error, so a test's own lines are about what it checks.
//
// It imports internal/lake, so internal/lake's (and internal/config's and schemas') in-package tests
// cannot use it.
package laketest

import (
	"context"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// New opens a new, empty local lake in a fresh directory of t.TempDir(), removed when the test ends.
// A local lake reads its files in place, so the user's read cache is not touched.
func New(t testing.TB) *lake.Lake {
	t.Helper()
	return Open(t, t.TempDir())
}

// Open opens the lake at uri (a local directory, created if missing, or s3://bucket/prefix) as
// lake.Open does.
func Open(t testing.TB, uri string) *lake.Lake {
	t.Helper()
	lk, err := lake.Open(t.Context(), uri)
	if err != nil {
		t.Fatalf("laketest: open %s: %v", uri, err)
	}
	return lk
}

// NewRun creates run on lk with cfg (config.Default() when cfg is nil) and returns the run's name.
func NewRun(t testing.TB, lk *lake.Lake, run string, cfg *config.Config) string {
	t.Helper()
	if cfg == nil {
		cfg = config.Default()
	}
	if err := lk.CreateRun(t.Context(), run, cfg); err != nil {
		t.Fatalf("laketest: create run %s: %v", run, err)
	}
	return run
}

// Run opens a new local lake (New) holding one run, "r", created with cfg (config.Default() when nil),
// and returns the lake and the run's name.
func Run(t testing.TB, cfg *config.Config) (*lake.Lake, string) {
	t.Helper()
	lk := New(t)
	return lk, NewRun(t, lk, "r", cfg)
}

// Write commits rows as the partition key in a transaction of its own (lake.CommitRows; a run
// partition's record is stage WriterStage(key), so writing one partition twice is an error) and returns
// what lake.WriteRows returned.
func Write[T schemas.Row](t testing.TB, lk *lake.Lake, key lake.PartitionKey, rows []T) lake.WriteResult {
	t.Helper()
	spec := lake.TxnSpec{Run: key.Run, Stage: WriterStage(key), Step: key.Step, Corpus: key.Corpus}
	res, err := lake.CommitRows(t.Context(), lk, spec, key, rows, lake.WriteOptions{})
	if err != nil {
		t.Fatalf("laketest: write %+v: %v", key, err)
	}
	return res
}

// WriterStage is the record stage Write commits a run partition under: test-<table>[-<fragment>], one
// per partition, so the partitions a test writes never replace one another.
func WriterStage(key lake.PartitionKey) string {
	if key.Fragment != "" {
		return "test-" + key.Table + "-" + key.Fragment
	}
	return "test-" + key.Table
}

// Commit is Write for callers that handle the error: rows committed as key in a transaction of their
// own (record stage WriterStage(key) for a run partition, Force unset).
func Commit[T schemas.Row](ctx context.Context, lk *lake.Lake, key lake.PartitionKey, rows []T, opts lake.WriteOptions) (lake.WriteResult, error) {
	spec := lake.TxnSpec{Run: key.Run, Stage: WriterStage(key), Step: key.Step, Corpus: key.Corpus}
	return lake.CommitRows(ctx, lk, spec, key, rows, opts)
}
