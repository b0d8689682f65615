package grpo

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
)

// paperEpisodes writes one step of a paper-scale rollout whose calls extend one another, as a chat
// template that keeps the history verbatim makes them: 24 envs × 8 plays × 1..25 turns, a 512-token first
// prompt, 64-token completions and 64 template/observation tokens between turns.
func paperEpisodes(b *testing.B, lk *lake.Lake, run string, cfg *config.Config) (turnCount, tokens int) {
	ctx := context.Background()
	if err := lk.CreateRun(ctx, run, cfg); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	tok := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = rng.Int32N(151936)
		}
		return out
	}
	const step = 1
	var episodes []schemas.EpisodeRow
	var turns []schemas.TurnRow
	var calls []schemas.LLMCallRow
	for env := 0; env < 24; env++ {
		for play := 0; play < 8; play++ {
			id := fmt.Sprintf("e%02d-%d", env, play)
			n := 1 + rng.IntN(25)
			history := tok(512)
			for turn := 0; turn < n; turn++ {
				if turn > 0 {
					history = append(history, tok(64)...)
				}
				completion := tok(64)
				lp := make([]float32, len(completion))
				for i := range lp {
					lp[i] = -rng.Float32()
				}
				callID := fmt.Sprintf("%s-t%02d", id, turn)
				calls = append(calls, schemas.LLMCallRow{Step: step, CallID: callID, Role: schemas.RoleAgent, Request: "{}", ResponseText: "x",
					PromptTokenIDs: append([]int32(nil), history...), CompletionTokenIDs: completion, CompletionLogprobs: lp,
					PromptTokens: int64(len(history)), CompletionTokens: int64(len(completion))})
				turns = append(turns, schemas.TurnRow{Step: step, EpisodeID: id, Turn: int32(turn), CallID: callID})
				tokens += len(history) + len(completion)
				history = append(history, completion...)
			}
			episodes = append(episodes, schemas.EpisodeRow{Step: step, EpisodeID: id, EnvID: fmt.Sprintf("env%02d", env), Index: int32(play),
				Return: float64(rng.IntN(2)), EndedBy: schemas.EndedDone, Turns: int32(n)})
		}
	}
	key := func(table string) lake.PartitionKey { return lake.PartitionKey{Run: run, Table: table, Step: step} }
	if _, err := lake.WriteRows(ctx, lk, key(schemas.EpisodesSpec.Name), episodes, lake.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := lake.WriteRows(ctx, lk, key(schemas.TurnsSpec.Name), turns, lake.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := lake.WriteRows(ctx, lk, lake.PartitionKey{Run: run, Table: schemas.LLMCallsSpec.Name, Step: step, Fragment: "rollout"}, calls, lake.WriteOptions{}); err != nil {
		b.Fatal(err)
	}
	return len(turns), tokens
}

// BenchmarkEpisodeBatch assembles one step's episode samples and mixed batch at paper scale (read the
// step's episodes, turns and llm_calls from the lake, join each play's turns into one sample checking the
// prefix invariant, cut and pad to 192) beside DuckDB alone reading the same rows (the three tables
// joined, every token list decoded and summed). Reported: ms per assembly, ms per DuckDB read, and their
// ratio (assembly / DuckDB).
func BenchmarkEpisodeBatch(b *testing.B) {
	ctx := context.Background()
	lk, err := lake.Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 4
	cfg.GRPO.SampleUnit, cfg.GRPO.MixRoles, cfg.GRPO.AdvStd = config.SampleEpisode, true, config.AdvStdPopulation
	turnCount, tokens := paperEpisodes(b, lk, "paper", cfg)
	sess, err := duck.OpenRuns(ctx, lk, "paper")
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	const query = `select count(*), sum(len(c.prompt_token_ids) + len(c.completion_token_ids) + len(c.completion_logprobs))
		from turns t join llm_calls c on c.call_id = t.call_id join episodes e on e.episode_id = t.episode_id where t.step = 1`
	var assemble, read time.Duration
	var rows int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		agent, _, _, err := Assemble(ctx, lk, "paper", cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		batch := AssignMixedBatch(agent, nil, cfg.GRPO.GlobalBatch, cfg.Seed, 1, true)
		rows = len(batch.Rows)
		t1 := time.Now()
		var n, sum int64
		if err := sess.DB.QueryRowContext(ctx, query).Scan(&n, &sum); err != nil {
			b.Fatal(err)
		}
		if int(n) != turnCount {
			b.Fatalf("DuckDB joined %d turns, want %d", n, turnCount)
		}
		assemble += t1.Sub(t0)
		read += time.Since(t1)
	}
	if rows != 192 {
		b.Fatalf("the batch has %d rows, want 192", rows)
	}
	b.ReportMetric(float64(turnCount), "turns")
	b.ReportMetric(float64(tokens)/1e6, "Mtokens")
	b.ReportMetric(assemble.Seconds()*1000/float64(b.N), "assemble-ms")
	b.ReportMetric(read.Seconds()*1000/float64(b.N), "duckdb-ms")
	b.ReportMetric(assemble.Seconds()/read.Seconds(), "x-duckdb")
}
