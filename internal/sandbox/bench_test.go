package sandbox

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"testing"
	"time"
)

const echoEnv = `
class Echo:
    def reset(self, seed):
        self.n = 0
        return "ready"
    def step(self, action):
        self.n += 1
        return action, 0.5, False, {"n": self.n}
`

// rawEcho is the reference: Go <-> Python JSON lines over plain pipes, no sandbox, no fork.
const rawEcho = `
import json, os, sys
r = os.fdopen(3, "rb", buffering=0)
w = os.fdopen(4, "wb", buffering=0)
buf = b""
while True:
    line = r.readline()
    if not line:
        break
    req = json.loads(line)
    w.write(json.dumps({"id": req["id"], "ok": True, "obs": req["action"], "reward": 0.5, "done": False, "info": {"n": 1}}).encode() + b"\n")
`

// timings collects per-op durations so benchmarks report medians, not just means.
type timings []time.Duration

func (ts timings) median() time.Duration {
	if len(ts) == 0 {
		return 0
	}
	s := append(timings(nil), ts...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func reportMedian(b *testing.B, ts timings) {
	b.ReportMetric(float64(ts.median().Microseconds()), "median-µs")
}

// BenchmarkStepRoundTrip compares one Env.Step through a warm isolated worker (Go -> fork
// server -> env child and back) with the raw Go <-> Python pipe round trip.
func BenchmarkStepRoundTrip(b *testing.B) {
	py, err := ResolvePython(context.Background(), testPython(b))
	if err != nil {
		b.Fatal(err)
	}
	var raw, isolated time.Duration
	b.Run("raw_pipe", func(b *testing.B) {
		reqR, reqW, _ := os.Pipe()
		repR, repW, _ := os.Pipe()
		cmd := exec.Command(py.Executable, "-c", rawEcho)
		cmd.ExtraFiles = []*os.File{reqR, repW}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		reqR.Close()
		repW.Close()
		defer func() { reqW.Close(); cmd.Wait() }()
		reader := bufio.NewReader(repR)
		ts := make(timings, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			data, _ := json.Marshal(map[string]any{"id": i, "op": "step", "action": "a move"})
			reqW.Write(append(data, '\n'))
			line, err := reader.ReadBytes('\n')
			if err != nil {
				b.Fatal(err)
			}
			var r reply
			if err := json.Unmarshal(line, &r); err != nil {
				b.Fatal(err)
			}
			ts = append(ts, time.Since(start))
		}
		reportMedian(b, ts)
		raw = ts.median()
	})
	b.Run("warm_isolated_worker", func(b *testing.B) {
		p := newTestPool(b, isoUnderTest(), nil)
		ctx := context.Background()
		prog, err := p.Load(ctx, echoEnv)
		if err != nil {
			b.Fatal(err)
		}
		defer prog.Close()
		env, err := prog.NewEnv(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := env.Reset(ctx, 1); err != nil {
			b.Fatal(err)
		}
		ts := make(timings, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if _, err := env.Step(ctx, "a move"); err != nil {
				b.Fatal(err)
			}
			ts = append(ts, time.Since(start))
		}
		reportMedian(b, ts)
		isolated = ts.median()
	})
	if raw > 0 && isolated > 0 {
		fmt.Printf("step round trip: isolated worker median %s, raw pipe median %s, ratio %.2f (target <= 1.5)\n",
			isolated, raw, float64(isolated)/float64(raw))
	}
}

// BenchmarkFreshEnv compares a fresh env instance from the fork server (new + reset) with
// starting an interpreter (python3 -c pass).
func BenchmarkFreshEnv(b *testing.B) {
	py, err := ResolvePython(context.Background(), testPython(b))
	if err != nil {
		b.Fatal(err)
	}
	var forked, cold time.Duration
	b.Run("fork_server", func(b *testing.B) {
		p := newTestPool(b, isoUnderTest(), nil)
		ctx := context.Background()
		prog, err := p.Load(ctx, counterEnv)
		if err != nil {
			b.Fatal(err)
		}
		defer prog.Close()
		ts := make(timings, 0, b.N)
		withReset := make(timings, 0, b.N)
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			start := time.Now()
			env, err := prog.NewEnv(ctx)
			if err != nil {
				b.Fatal(err)
			}
			ts = append(ts, time.Since(start))
			if _, err := env.Reset(ctx, int64(i)); err != nil {
				b.Fatal(err)
			}
			withReset = append(withReset, time.Since(start))
			env.Close()
		}
		reportMedian(b, ts)
		b.ReportMetric(float64(withReset.median().Microseconds()), "median-with-reset-µs")
		forked = ts.median()
	})
	b.Run("python_c_pass", func(b *testing.B) {
		ts := make(timings, 0, b.N)
		for i := 0; i < b.N; i++ {
			start := time.Now()
			if err := exec.Command(py.Executable, "-c", "pass").Run(); err != nil {
				b.Fatal(err)
			}
			ts = append(ts, time.Since(start))
		}
		reportMedian(b, ts)
		cold = ts.median()
	})
	if forked > 0 && cold > 0 {
		fmt.Printf("fresh env (request to the new instance's reply): fork server median %s (target <= 2ms), python3 -c pass median %s\n", forked, cold)
	}
}
