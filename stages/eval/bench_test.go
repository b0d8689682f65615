package eval

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// benchEnv makes a lake with one benchmark of items and a run whose Agent is an instant scripted server.
func benchEnv(b testing.TB, items []schemas.BenchItemRow, script llmtest.Script) *stage.Env {
	ctx := context.Background()
	lk := laketest.New(b)
	laketest.Write(b, lk, lake.BenchKey(items[0].Bench), items)
	srv := llmtest.Start(b, script, "agent-model")
	srv.KeepRequests(false)
	cfg, _ := config.Preset("qwen3-4b-games")
	cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = srv.URL, "agent-model"
	cfg.Eval.ChunkItems = 1000
	laketest.NewRun(b, lk, "r", cfg)
	env, err := stage.NewEnv(ctx, lk, "r", nil)
	if err != nil {
		b.Fatal(err)
	}
	py := os.Getenv(sandbox.PythonEnv)
	if py == "" {
		py = "/usr/bin/python3"
	}
	pool, err := sandbox.NewPool(ctx, sandbox.Options{Python: py})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { pool.Close() })
	env.SetPool(pool)
	return env
}

// BenchmarkEvalMath: 10,000 math items × 4 samples asked of an instant server, scored (every answer an
// integer, decided without sympy) and committed. Target: under 30 s on 2 cores; reports items/s.
func BenchmarkEvalMath(b *testing.B) {
	const n = 10000
	items := make([]schemas.BenchItemRow, n)
	for i := range items {
		items[i] = schemas.BenchItemRow{Bench: "m", ItemID: fmt.Sprintf("i%05d", i), Kind: schemas.BenchMath,
			Question: fmt.Sprintf("What is %d + %d?", i, i), Answer: fmt.Sprint(2 * i), Meta: "{}"}
	}
	env := benchEnv(b, items, func(req *llm.ChatRequestBody) llmtest.Reply {
		return llmtest.Reply{Text: "It is \\boxed{42}."}
	})
	ctx := context.Background()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		began := time.Now()
		if _, err := runBench(ctx, env.WithForce(true), int64(it), "m", 4); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n)/time.Since(began).Seconds(), "items/s")
	}
}

// BenchmarkEvalCode: 1,000 code items with 10 stdin tests each, one sample, every program correct, run in
// the sandbox. Target: under 2 minutes on 2 cores; reports tests/s beside a plain python3 process per test
// (plain_tests/s, over the first 200 tests, no sandbox).
func BenchmarkEvalCode(b *testing.B) {
	const n, perItem = 1000, 10
	tests := `{"public":[`
	for t := 0; t < perItem; t++ {
		if t > 0 {
			tests += ","
		}
		tests += fmt.Sprintf(`{"input":"%d %d\n","output":"%d\n","testtype":"stdin"}`, t, t+1, 2*t+1)
	}
	tests += `],"private":[]}`
	items := make([]schemas.BenchItemRow, n)
	for i := range items {
		items[i] = schemas.BenchItemRow{Bench: "c", ItemID: fmt.Sprintf("i%05d", i), Kind: schemas.BenchCode,
			Question: "Add two integers.", Tests: tests, Meta: "{}"}
	}
	const program = "a, b = map(int, input().split())\nprint(a + b)"
	env := benchEnv(b, items, func(req *llm.ChatRequestBody) llmtest.Reply {
		return llmtest.Reply{Text: "```python\n" + program + "\n```"}
	})
	ctx := context.Background()
	b.ResetTimer()
	for it := 0; it < b.N; it++ {
		began := time.Now()
		if _, err := runBench(ctx, env.WithForce(true), int64(it), "c", 1); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n*perItem)/time.Since(began).Seconds(), "tests/s")
	}
	b.StopTimer()
	dir := b.TempDir()
	os.WriteFile(dir+"/p.py", []byte(program), 0o644)
	began := time.Now()
	for t := 0; t < 200; t++ {
		cmd := exec.Command("/usr/bin/python3", dir+"/p.py")
		cmd.Stdin = strings.NewReader(fmt.Sprintf("%d %d\n", t, t+1))
		if out, err := cmd.Output(); err != nil || strings.TrimSpace(string(out)) != fmt.Sprint(2*t+1) {
			b.Fatalf("plain python3: %q %v", out, err)
		}
	}
	b.ReportMetric(200/time.Since(began).Seconds(), "plain_tests/s")
}
