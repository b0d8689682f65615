package bench

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkCodeRunner: 200 correct answers with 10 stdin tests each, 8 answers at a time (as eval's
// sandbox slots), through CodeRunner (a program per answer, a fresh instance per test, outputs compared
// here) and, as the reference in the same run, through the runner as it was before it was guarded
// (testdata/hostile/scorers/unguarded_code_runner.py: one program for every answer, all of an answer's
// tests in one instance). Reports tests/s of each and their ratio (goal: ratio >= 0.67, within 1.5x).
func BenchmarkCodeRunner(b *testing.B) {
	const answers, perAnswer, parallel = 200, 10, 8
	var tests []CodeTest
	for t := 0; t < perAnswer; t++ {
		tests = append(tests, CodeTest{Input: fmt.Sprintf("%d %d\n", t, t+1), Output: fmt.Sprintf("%d\n", 2*t+1), TestType: "stdin"})
	}
	const program = "a, b = map(int, input().split())\nprint(a + b)"
	pool := testPool(b)
	ctx := context.Background()
	runner := NewCodeRunner(pool)
	old := &loaded{pool: pool, code: hostileAnswer(b, "scorers/unguarded_code_runner.py")}
	defer old.close()
	each := func(run func() (CodeResult, error)) float64 {
		began := time.Now()
		var wg sync.WaitGroup
		jobs := make(chan int)
		for w := 0; w < parallel; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range jobs {
					if res, err := run(); err != nil || res.Failed != -1 {
						b.Errorf("%+v %v", res, err)
					}
				}
			}()
		}
		for i := 0; i < answers; i++ {
			jobs <- i
		}
		close(jobs)
		wg.Wait()
		return float64(answers*perAnswer) / time.Since(began).Seconds()
	}
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		ref := each(func() (CodeResult, error) { return unguardedRun(ctx, old, program, tests) })
		got := each(func() (CodeResult, error) { return runner.Run(ctx, program, tests, "") })
		b.ReportMetric(ref, "unguarded_tests/s")
		b.ReportMetric(got, "tests/s")
		b.ReportMetric(got/ref, "ratio")
	}
}
