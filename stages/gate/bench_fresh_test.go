package gate

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/sandbox"
)

// BenchmarkGateThroughputFreshWorkers is BenchmarkGateThroughput with sandbox.Options.FreshWorkers:
// every program gets a worker that never ran generated code (the cost of never reusing workers).
func BenchmarkGateThroughputFreshWorkers(b *testing.B) {
	samples := readSamples(b, repoPath("testdata", "envs"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	pool, err := sandbox.NewPool(ctx, sandbox.Options{
		Python: testPython(), Isolation: sandbox.IsolationBwrap, Workers: 2, FreshWorkers: true,
		LoadTimeout: 2 * time.Second, ResetTimeout: 2 * time.Second, StepTimeout: time.Second,
		CPUSeconds: 10, AddressSpace: 512 << 20,
	})
	cancel()
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
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
				if v := Check(context.Background(), pool, s.Code, CheckOptions{Setting: s.Setting, Hint: s.Hint}); !v.Accepted {
					b.Errorf("%s rejected: %s", s.Name, v.FailureText())
				}
			}()
		}
		wg.Wait()
		total += time.Since(start)
	}
	rate := float64(b.N*len(samples)) / total.Seconds()
	b.ReportMetric(rate, "envs/s")
	fmt.Printf("gate throughput, fresh workers: %.1f envs/s (%d sample envs, 2 at a time)\n", rate, len(samples))
}
