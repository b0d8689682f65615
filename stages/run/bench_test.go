package run

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/synth"
	"github.com/spadekit/spade/stages/grpo"
	"github.com/spadekit/spade/stages/regret"
	"github.com/spadekit/spade/stages/stage"
)

var (
	paperOnce sync.Once
	paperDir  string
	paperLake *lake.Lake
	paperErr  error
)

// TestMain removes the benchmark's lake after every test and benchmark of the package.
func TestMain(m *testing.M) {
	code := m.Run()
	if paperDir != "" {
		os.RemoveAll(paperDir)
	}
	os.Exit(code)
}

// paperRun writes the benchmark's synthetic 400-step run (synth.PaperRollout: 24 envs × 2×16 episodes per
// step, tokens for the last pool) and scores steps 0..398, so step 399 finds 399 ema_state partitions
// and a full memory, as in a real run.
func paperRun(b *testing.B) *lake.Lake {
	paperOnce.Do(func() {
		dir, err := os.MkdirTemp("", "spade-bench-")
		if err != nil {
			paperErr = err
			return
		}
		paperDir = dir
		ctx := context.Background()
		lk, err := lake.Open(ctx, dir)
		if err != nil {
			paperErr = err
			return
		}
		began := time.Now()
		if paperErr = synth.WriteRollout(ctx, lk, "paper", synth.PaperRollout()); paperErr != nil {
			return
		}
		env, err := stage.NewEnv(ctx, lk, "paper", nil)
		if err != nil {
			paperErr = err
			return
		}
		for step := int64(0); step < 399; step++ {
			if _, paperErr = stage.Within(ctx, env, stage.Regret, step, regret.Run); paperErr != nil {
				return
			}
		}
		b.Logf("setup: 400-step fixture and 399 scored steps in %v", time.Since(began))
		paperLake = lk
	})
	if paperErr != nil {
		b.Fatal(paperErr)
	}
	return paperLake
}

// BenchmarkStepScoring measures one step of the paper-sized run (docs/architecture.md, "One training step":
// 24 envs × 32 episodes): regret (every variant, EMA state, pool-end finals and the memory snapshot) plus
// GRPO batch assembly (agent samples from turns and llm_calls tokens, designer samples, batches; trainer
// none), reading and committing through a local lake. Step 399 ends a pool, so it is the most expensive step.
// Target: < 1 s on 2 cores (go test -run '^$' -bench StepScoring -cpu 2 ./stages/run/).
func BenchmarkStepScoring(b *testing.B) {
	lk := paperRun(b)
	ctx := context.Background()
	var regretTime, grpoTime time.Duration
	env, err := stage.NewEnv(ctx, lk, "paper", nil)
	if err != nil {
		b.Fatal(err)
	}
	env.Force = true
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		res, err := stage.Within(ctx, env, stage.Regret, 399, regret.Run)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		g, err := stage.Within(ctx, env, stage.GRPO, 399, func(ctx context.Context, env *stage.Env, step int64) (grpo.Result, error) {
			return grpo.Run(ctx, env, step, nil)
		})
		if err != nil {
			b.Fatal(err)
		}
		regretTime += t1.Sub(t0)
		grpoTime += time.Since(t1)
		if !res.PoolEnd || res.Memory != 200 || g.AgentSamples == 0 || g.DesignerSamples == 0 {
			b.Fatalf("step 399 did not do a pool end's work: %+v %+v", res, g)
		}
		if i == 0 {
			b.ReportMetric(float64(g.AgentSamples), "agent-samples")
		}
	}
	b.ReportMetric(regretTime.Seconds()*1000/float64(b.N), "regret-ms/step")
	b.ReportMetric(grpoTime.Seconds()*1000/float64(b.N), "grpo-ms/step")
}
