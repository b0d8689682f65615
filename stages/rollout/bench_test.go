package rollout_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/spadekit/spade/stages/stage"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/rollout"
)

// BenchmarkRolloutPaperScale plays paper-scale steps, each a pool's first (iteration i plays step
// i·sample.refresh_every, whose pool is committed with the timer stopped): 24 envs × (8 unhinted +
// 16 hinted, the preset's rollout.group_size and hinted_group_size) episodes × 25 turns = 14,400 turns
// against the scripted server answering instantly (a wrong guess every turn, so every
// episode runs all 25 turns), through the real sandbox (sandbox.workers default: 8 programs at once)
// and a local lake. Target: ≤ 20 s on 2 cores. Reported: wall seconds, turns/s, the lake's wall
// seconds, and the LLM and sandbox busy time summed over concurrent episodes (episode-seconds).
func BenchmarkRolloutPaperScale(b *testing.B) {
	ctx := context.Background()
	srv := llmtest.NewServer(func(*llm.ChatRequestBody) llmtest.Reply {
		return llmtest.Reply{Text: "Let me try this one.\n<action>0</action>"}
	}, agentModel)
	defer srv.Close()
	srv.KeepRequests(false)
	cfg, err := config.Preset("qwen3-30b-a3b-games")
	if err != nil {
		b.Fatal(err)
	}
	cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = srv.URL, agentModel
	lk := laketest.New(b)
	laketest.NewRun(b, lk, "bench", cfg)
	var envs []schemas.EnvRow
	for i := range 24 {
		// 24 distinct programs (a comment makes each its own env), as in a real pool.
		envs = append(envs, envRow(0, i, fmt.Sprintf("# env %d\n%s", i, guessEnv), "bisect", schemas.Skills[i%6], "games"))
	}
	refresh := int64(max(cfg.Sample.RefreshEvery, 1))
	writePool := func(step int64) {
		rows := make([]schemas.EnvRow, len(envs))
		for i, e := range envs {
			e.Step, e.PoolStep = step, step
			rows[i] = e
		}
		laketest.Write(b, lk, lake.PartitionKey{Run: "bench", Table: "envs", Step: step}, rows)
	}
	client, err := llm.New(ctx, llm.SettingsFromConfig(cfg, ""), nil)
	if err != nil {
		b.Fatal(err)
	}
	pool := testPool(b, 8)
	env, err := stage.NewEnv(ctx, lk, "bench", nil)
	if err != nil {
		b.Fatal(err)
	}
	env.SetClient(client)
	env.SetPool(pool)
	b.ResetTimer()
	var total rollout.Timing
	var turns int
	var wall time.Duration
	for i := range b.N {
		step := int64(i) * refresh
		b.StopTimer()
		writePool(step)
		b.StartTimer()
		t0 := time.Now()
		res, err := stage.Within(ctx, env, stage.Rollout, step, rollout.Run)
		wall += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		if want := 24 * (cfg.Rollout.GroupSize + cfg.Rollout.HintedGroupSize) * cfg.Rollout.MaxTurns; res.Turns != want {
			b.Fatalf("played %d turns, want %d (ended by %v)", res.Turns, want, res.EndedBy)
		}
		turns += res.Turns
		total.Episodes += res.Timing.Episodes
		total.LLM += res.Timing.LLM
		total.Sandbox += res.Timing.Sandbox
		total.Lake += res.Timing.Lake
	}
	n := float64(b.N)
	b.ReportMetric(wall.Seconds()/n, "s/step")
	b.ReportMetric(float64(turns)/wall.Seconds(), "turns/s")
	b.ReportMetric(total.Episodes.Seconds()/n, "episodes_wall_s")
	b.ReportMetric(total.Lake.Seconds()/n, "lake_wall_s")
	b.ReportMetric(total.LLM.Seconds()/n, "llm_busy_s")
	b.ReportMetric(total.Sandbox.Seconds()/n, "sandbox_busy_s")
}
