package run

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/generate"
	"github.com/spadekit/spade/stages/sample"
	"github.com/spadekit/spade/stages/stage"
)

// BenchmarkGenerateSaturation runs sample, generate and the gate (with the runner's Regenerator and
// Hinter, generate.hint_mode separate, generate.regen repair) of a refresh step of 24 slots against a
// stand-in whose Designer and hint calls take 4 s each, the gate refusing the first attempt of 7 of the
// 24 slots (29%: a program that raises at reset) and accepting the repair. The reference, measured in the
// same run, is the longest slot's chain: a one-slot step whose first attempt is refused (Designer call,
// check, regeneration, check, hint call). Reported: the step's wall ÷ that chain (goal ≤ 1.25), and the
// Designer and hint calls made.
func BenchmarkGenerateSaturation(b *testing.B) {
	ctx := context.Background()
	const delay = 4 * time.Second
	good, err := os.ReadFile(filepath.Join("..", "..", "testdata", "envs", "math_modular_lock.py"))
	if err != nil {
		b.Fatal(err)
	}
	const broken = "class Broken:\n    def reset(self, seed):\n        return undefined_name\n    def step(self, action):\n        return '', 0.0, True, {}\n"
	docRef := regexp.MustCompile(`DOC-\d+`)
	var mu sync.Mutex
	refused := map[string]bool{} // the corpus documents whose first attempt is refused
	var designerCalls, hintCalls int
	srv := llmtest.NewServer(func(req *llm.ChatRequestBody) llmtest.Reply {
		prompt := req.Messages[len(req.Messages)-1].Content
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(req.Messages[0].Content, hintSystem) {
			hintCalls++
			return llmtest.Reply{Text: "Probe twice, then answer with one integer.", Delay: delay}
		}
		designerCalls++
		if refused[docRef.FindString(prompt)] && !strings.Contains(prompt, "undefined_name") {
			return llmtest.Reply{Text: "```python\n" + broken + "```\n", Delay: delay}
		}
		return llmtest.Reply{Text: "```python\n" + string(good) + "```\n", Delay: delay}
	}, "designer-model")
	defer srv.Close()
	srv.KeepRequests(false)

	base, err := config.Preset("qwen3-30b-a3b-games")
	if err != nil {
		b.Fatal(err)
	}
	for key, value := range map[string]string{
		"generate.hint_mode": "separate", "generate.regen": "repair", "gate.checks": "strict",
		"llm.designer.base_url": srv.URL, "llm.designer.model": "designer-model",
		"llm.agent.base_url": srv.URL, "llm.agent.model": "designer-model",
	} {
		if err := base.Set(key, value); err != nil {
			b.Fatal(err)
		}
	}
	base.Sandbox.Python = os.Getenv(sandbox.PythonEnv)
	lk := laketest.New(b)
	var corpus []schemas.CorpusRow
	for i := range 200 {
		corpus = append(corpus, schemas.CorpusRow{DocID: fmt.Sprintf("doc-%d", i), Text: fmt.Sprintf("DOC-%d: a lock opens at a hidden residue.", i)})
	}
	laketest.Write(b, lk, lake.CorpusKey(base.Sample.Corpus), corpus)
	pool, err := sandbox.NewPool(ctx, stage.SandboxOptions(base))
	if err != nil {
		b.Fatalf("sandbox pool: %v", err)
	}
	defer pool.Close()
	var gateStage stage.Stage
	for _, s := range Stages() {
		if s.Name() == stage.Gate {
			gateStage = s
		}
	}
	// step runs sample, generate and the gate of step 0 of a fresh run of slots slots, the first attempt
	// refused for the slots in refuse; it returns the wall time and the accepted envs.
	step := func(name string, slots int, refuse map[int32]bool) (time.Duration, int) {
		b.StopTimer()
		cfg := *base
		cfg.Sample.EnvsPerStep = slots
		laketest.NewRun(b, lk, name, &cfg)
		env, err := stage.NewEnv(ctx, lk, name, nil)
		if err != nil {
			b.Fatal(err)
		}
		env.SetPool(pool)
		b.StartTimer()
		t0 := time.Now()
		if _, err := stage.Execute(ctx, env, sample.Stage{}, 0); err != nil {
			b.Fatal(err)
		}
		rows, err := lake.ReadRows[schemas.SampleRow](ctx, lk, lake.PartitionKey{Run: name, Table: "samples", Step: 0})
		if err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		clear(refused)
		for _, r := range rows {
			if refuse[r.Slot] {
				refused[strings.ToUpper(strings.Replace(r.DocID, "doc", "DOC", 1))] = true
			}
		}
		mu.Unlock()
		if _, err := stage.Execute(ctx, env, generate.Stage{}, 0); err != nil {
			b.Fatal(err)
		}
		if _, err := stage.Execute(ctx, env, gateStage, 0); err != nil {
			b.Fatal(err)
		}
		wall := time.Since(t0)
		envs, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: name, Table: "envs", Step: 0})
		if err != nil {
			b.Fatal(err)
		}
		for _, e := range envs {
			if e.Hint == "" {
				b.Fatalf("env %s has no hint", e.EnvID)
			}
		}
		return wall, len(envs)
	}
	chain, n := step("chain", 1, map[int32]bool{0: true})
	if n != 1 {
		b.Fatalf("the reference slot was not accepted on its repair (%d envs)", n)
	}
	refuse := map[int32]bool{0: true, 3: true, 6: true, 10: true, 13: true, 17: true, 21: true}
	mu.Lock()
	designerCalls, hintCalls = 0, 0
	mu.Unlock()
	b.ResetTimer()
	var wall time.Duration
	for i := range b.N {
		w, n := step(fmt.Sprintf("bench-%d", i), 24, refuse)
		if n != 24 {
			b.Fatalf("%d of 24 slots accepted, want all (the refused ones on their repair)", n)
		}
		wall += w
	}
	b.StopTimer()
	b.ReportMetric(wall.Seconds()/float64(b.N), "s/step")
	b.ReportMetric(chain.Seconds(), "chain_s")
	b.ReportMetric(wall.Seconds()/float64(b.N)/chain.Seconds(), "wall/chain")
	mu.Lock()
	b.ReportMetric(float64(designerCalls)/float64(b.N), "designer_calls/step")
	b.ReportMetric(float64(hintCalls)/float64(b.N), "hint_calls/step")
	mu.Unlock()
}
