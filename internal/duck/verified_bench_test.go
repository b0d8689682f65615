package duck_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/synth"
)

// BenchmarkVerifiedRead times a DuckDB session over the synthetic 400-step paper run (every table a
// view, then two queries over episodes and turns) three ways: unverified (the views over a file list
// taken once: neither the listing of the run's records nor any check), verified-first (as a fresh
// process: the run's records listed and every committed file hashed against them before the views
// exist) and verified-later (listed, the files already hashed in this process: a stat each). A read
// before files were checked was the listing plus the views, which verified-later measures but for the
// stats; the goal is verified-first within 1.3x of that. The run is written once (about 10 s).
func BenchmarkVerifiedRead(b *testing.B) {
	ctx := context.Background()
	began := time.Now()
	lk, dir, err := synth.PaperLake(ctx, "spade-verified-read-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b.Logf("setup: paper-size synthetic run in %v", time.Since(began))
	listing, err := lk.ListRun(ctx, "paper")
	if err != nil {
		b.Fatal(err)
	}
	session := func(b *testing.B, l *lake.RunListing) {
		if l == nil {
			var err error
			if l, err = lk.ListRun(ctx, "paper"); err != nil {
				b.Fatal(err)
			}
		}
		s, err := duck.OpenListed(ctx, lk, map[string]*lake.RunListing{"paper": l}, "paper")
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		var episodes, done int64
		var mean float64
		if err := s.DB.QueryRowContext(ctx, "select count(*), avg(return) from episodes").Scan(&episodes, &mean); err != nil {
			b.Fatal(err)
		}
		if err := s.DB.QueryRowContext(ctx, "select count(*) from turns where done").Scan(&done); err != nil {
			b.Fatal(err)
		}
		if episodes == 0 || done == 0 {
			b.Fatalf("%d episodes, %d done turns", episodes, done)
		}
	}
	b.Run("unverified", func(b *testing.B) {
		for range b.N {
			session(b, listing)
		}
	})
	b.Run("verified-first", func(b *testing.B) {
		for range b.N {
			lake.ForgetVerifiedFiles()
			session(b, nil)
		}
	})
	b.Run("verified-later", func(b *testing.B) {
		for range b.N {
			session(b, nil)
		}
	})
}
