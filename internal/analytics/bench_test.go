package analytics

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/gobuild"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/synth"
)

var (
	paperOnce sync.Once
	paperLake *lake.Lake
	paperErr  error
)

// benchLake returns a lake holding the paper-sized synthetic run "full" (400 steps, about 307,000 episodes
// and 4 million turns) with its TF-IDF + LSA embeddings. It is built once into $TMPDIR (about 20 s) and
// reused by later benchmark runs; bump the directory's version when the generator changes.
func benchLake(b *testing.B) *lake.Lake {
	b.Helper()
	paperOnce.Do(func() {
		ctx := context.Background()
		dir := filepath.Join(os.TempDir(), "spade-bench-paper-v2")
		done := filepath.Join(dir, "complete")
		if _, err := os.Stat(done); err != nil {
			os.RemoveAll(dir)
			lk, err := lake.Open(ctx, dir)
			if err != nil {
				paperErr = err
				return
			}
			if paperErr = synth.Write(ctx, lk, "full", synth.Paper()); paperErr != nil {
				return
			}
			if _, paperErr = EnsureEmbeddings(ctx, lk, "full", EmbedderSpec{}); paperErr != nil {
				return
			}
			os.WriteFile(done, nil, 0o644)
		}
		paperLake, paperErr = lake.Open(ctx, dir)
	})
	if paperErr != nil {
		b.Fatal(paperErr)
	}
	return paperLake
}

// BenchmarkModels times every model of sql/ on the paper-sized synthetic run, each in a session opened
// once (views and parameters are set up outside the timer). Target: under 1 s each on 2 cores.
func BenchmarkModels(b *testing.B) {
	lk := benchLake(b)
	ctx := context.Background()
	s, err := Open(ctx, lk, "full", "")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, model := range Models() {
		b.Run(model, func(b *testing.B) {
			cpu := cpuClock()
			defer func() { reportCPU(b, cpu) }()
			for i := 0; i < b.N; i++ {
				t, err := s.Model(ctx, model)
				if err != nil {
					b.Fatal(err)
				}
				if len(t.Rows) == 0 && model != "repeated_envs" {
					b.Fatalf("%s: no rows", model)
				}
			}
		})
	}
}

// BenchmarkMetricsCommand times `spade metrics` end to end on the paper-sized run (embeddings already
// stored): process start, views, parameters, every dashboard model, the audit and the repeated-env table.
// Target: under 3 s on 2 cores.
func BenchmarkMetricsCommand(b *testing.B) {
	benchLake(b)
	bin := filepath.Join(b.TempDir(), "spade")
	if err := gobuild.Build(gobuild.SpadePackage, bin); err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), "spade-bench-paper-v2")
	b.ResetTimer()
	var cpu time.Duration
	defer func() { b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op") }()
	for i := 0; i < b.N; i++ {
		cmd := exec.Command(bin, "--lake", dir, "--run", "full", "metrics")
		out, err := cmd.CombinedOutput()
		if cmd.ProcessState != nil {
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		}
		if err != nil {
			b.Fatalf("spade metrics: %v\n%s", err, out)
		}
		if !bytes.Contains(out, []byte("quality audit")) {
			b.Fatalf("unexpected output:\n%s", out)
		}
	}
}

// cpuClock returns this process's user+system CPU time so far.
func cpuClock() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU seconds per op since start: on a shared machine the wall time depends on the
// other tenants, the CPU time much less (on 2 idle cores the wall time is between cpu/2 and cpu).
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric((cpuClock()-start).Seconds()/float64(b.N), "cpu-s/op")
}
