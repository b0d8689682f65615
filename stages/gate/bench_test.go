package gate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/sandbox"
)

// BenchmarkGateThroughput runs every gate check on all sample envs (two at a time, the
// machine's two cores) and reports envs per second.
func BenchmarkGateThroughput(b *testing.B) {
	samples := readSamples(b, repoPath("testdata", "envs"))
	pool := newPool(b, sandbox.IsolationBwrap)
	ctx := context.Background()
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, 2)
		for _, s := range samples {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sem <- struct{}{}
				defer func() { <-sem }()
				if v := Check(ctx, pool, s.Code, CheckOptions{Setting: s.Setting, Hint: s.Hint}); !v.Accepted {
					b.Errorf("%s rejected: %s", s.Name, v.FailureText())
				}
			}()
		}
		wg.Wait()
		total += time.Since(start)
	}
	rate := float64(b.N*len(samples)) / total.Seconds()
	b.ReportMetric(rate, "envs/s")
	fmt.Printf("gate throughput: %.1f envs/s (%d sample envs, 2 at a time)\n", rate, len(samples))
}
