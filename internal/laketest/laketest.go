// Package laketest builds the lakes and runs that tests start from: a local lake in the test's temporary
// directory, a run with a given configuration, committed partitions. Every helper fails the test (with
// t.Fatalf) on an error, so a test's own lines are about what it checks.
//
// It imports internal/lake, so internal/lake's (and internal/config's and schemas') in-package tests
// cannot use it.
package laketest

import (
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

// Write commits rows as the partition key with lake.WriteOptions{} (a committed partition is an error)
// and returns what lake.WriteRows returned.
func Write[T schemas.Row](t testing.TB, lk *lake.Lake, key lake.PartitionKey, rows []T) lake.WriteResult {
	t.Helper()
	res, err := lake.WriteRows(t.Context(), lk, key, rows, lake.WriteOptions{})
	if err != nil {
		t.Fatalf("laketest: write %+v: %v", key, err)
	}
	return res
}
