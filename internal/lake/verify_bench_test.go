package lake_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/synth"
)

// BenchmarkVerifyPaperRun times `spade lake verify`'s work (every committed file of every stage's
// record hashed, orphans listed) on the synthetic paper-size run: 400 steps × 24 envs × 32 episodes
// (about 4.5 million rows). Target: under 10 s on 2 cores. The run is written once (about 40 s).
func BenchmarkVerifyPaperRun(b *testing.B) {
	ctx := context.Background()
	began := time.Now()
	lk, dir, err := synth.PaperLake(ctx, "spade-verify-bench-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	b.Logf("setup: paper-size synthetic run in %v", time.Since(began))
	b.ResetTimer()
	for range b.N {
		rep, err := lk.Verify(ctx, "paper", lake.VerifyOptions{Grace: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		if len(rep.Problems) != 0 || rep.Files == 0 {
			b.Fatalf("verify found %d problems over %d files", len(rep.Problems), rep.Files)
		}
		b.ReportMetric(float64(rep.Files), "files")
		b.ReportMetric(float64(rep.Bytes)/1e6, "MB")
	}
}
