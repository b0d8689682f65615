package analytics

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/spade-rl/spade/internal/duck"
	sqlfiles "github.com/spade-rl/spade/sql"
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
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("%s differs from %s\n--- got\n%s\n--- want\n%s", name, path, out.String(), want)
			}
		})
	}
}
