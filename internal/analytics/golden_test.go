package analytics

import (
	"bytes"
	"context"
	"encoding/csv"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/duck"
	sqlfiles "github.com/spadekit/spade/sql"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/analytics/golden")

var goldenDir = filepath.Join("..", "..", "testdata", "analytics", "golden")

// TestModelsGolden runs every model of sql/ on the hand-made seed run and compares its CSV output with
// testdata/analytics/golden/<model>.csv (regenerate with -update, then check the diff by hand).
func TestModelsGolden(t *testing.T) {
	lk := loadSeedRun(t)
	ctx := context.Background()
	s, err := Open(ctx, lk, "seed", "")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// tfidf reads `documents`; over the seed, the distinct programs of envs.
	if _, err := s.DB.ExecContext(ctx, `create temp view documents as
		select distinct code_sha256 as doc_id, code as text from envs`); err != nil {
		t.Fatal(err)
	}
	for _, name := range sqlfiles.Names() {
		t.Run(name, func(t *testing.T) {
			text, _ := sqlfiles.Query(name)
			var out bytes.Buffer
			if err := duck.Render(ctx, s.DB, text, "csv", "", &out); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(goldenDir, name+".csv")
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := csvDiff(out.String(), string(want)); diff != "" {
				t.Errorf("%s differs from %s: %s\n--- got\n%s\n--- want\n%s", name, path, diff, out.String(), want)
			}
		})
	}
}

// csvDiff compares two CSV texts cell by cell: numbers within 1e-12 relative (BLAS kernels and summation
// order differ in the last bits between machines), everything else exactly. It returns "" when equal.
func csvDiff(got, want string) string {
	g, err1 := csv.NewReader(strings.NewReader(got)).ReadAll()
	w, err2 := csv.NewReader(strings.NewReader(want)).ReadAll()
	if err1 != nil || err2 != nil {
		return fmt.Sprintf("unparsable CSV: %v %v", err1, err2)
	}
	if len(g) != len(w) {
		return fmt.Sprintf("%d rows, want %d", len(g), len(w))
	}
	for i := range g {
		if len(g[i]) != len(w[i]) {
			return fmt.Sprintf("row %d: %d cells, want %d", i, len(g[i]), len(w[i]))
		}
		for j := range g[i] {
			if g[i][j] == w[i][j] {
				continue
			}
			a, errA := strconv.ParseFloat(g[i][j], 64)
			b, errB := strconv.ParseFloat(w[i][j], 64)
			if errA != nil || errB != nil || math.Abs(a-b) > 1e-12*math.Max(math.Max(math.Abs(a), math.Abs(b)), 1e-300) &&
				math.Abs(a-b) > 1e-15 {
				return fmt.Sprintf("row %d column %d: %q, want %q", i, j, g[i][j], w[i][j])
			}
		}
	}
	return ""
}

// TestCachedSessionAgrees: every model gives the same rows in a session with the cached episodes table
// (what spade metrics and report use) as over the plain views.
func TestCachedSessionAgrees(t *testing.T) {
	lk := loadSeedRun(t)
	ctx := context.Background()
	plain, err := Open(ctx, lk, "seed", "")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	cached, err := OpenCached(ctx, lk, "seed", "")
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	for _, name := range Models() {
		var a, b bytes.Buffer
		if err := duck.Render(ctx, plain.DB, "select * from "+name, "csv", "", &a); err != nil {
			t.Fatal(err)
		}
		if err := duck.Render(ctx, cached.DB, "select * from "+name, "csv", "", &b); err != nil {
			t.Fatalf("%s on the cached session: %v", name, err)
		}
		if diff := csvDiff(b.String(), a.String()); diff != "" {
			t.Errorf("%s: cached session differs: %s", name, diff)
		}
	}
}
