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
	gateThroughput(b, newPool(b, sandbox.IsolationBwrap), 2)
}

// BenchmarkGateThroughputStageDefaults is BenchmarkGateThroughput with the gate stage's own
// concurrency: the default sandbox.workers (8), one candidate per worker at a time, so a check
// waiting between a probe's reset and its step (CheckOptions.TurnDelay) leaves the cores to others.
func BenchmarkGateThroughputStageDefaults(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := sandbox.NewPool(ctx, sandbox.Options{Python: testPython(), Isolation: sandbox.IsolationBwrap,
		LoadTimeout: 2 * time.Second, ResetTimeout: 2 * time.Second, StepTimeout: time.Second, CPUSeconds: 10, AddressSpace: 512 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	gateThroughput(b, pool, pool.Options().Workers)
}

// gateThroughput checks every sample env, at most parallel at a time, b.N times over.
func gateThroughput(b *testing.B, pool *sandbox.Pool, parallel int) {
	samples := readSamples(b, repoPath("testdata", "envs"))
	ctx := context.Background()
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		var wg sync.WaitGroup
		sem := make(chan struct{}, parallel)
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
	fmt.Printf("gate throughput: %.1f envs/s (%d sample envs, %d at a time)\n", rate, len(samples), parallel)
}
