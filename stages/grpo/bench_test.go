package grpo

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

// qwenVocab is the vocabulary size of the paper's Qwen3 models: the synthetic token ids lie below it.
const qwenVocab = 151936

// episodeShape is the token layout of a synthetic rollout step: 24 envs × 8 plays × 1..25 turns (the
// turn counts and returns do not depend on the lengths), each play a first prompt, then per turn a
// completion, with Between template/observation tokens before every later prompt.
type episodeShape struct {
	Prompt, Completion, Between int
}

// paperShape is the paper's scale: a 512-token first prompt, 64-token completions, 64 tokens between turns.
var paperShape = episodeShape{Prompt: 512, Completion: 64, Between: 64}

// divided returns the shape with every length divided by div (at least 1 token each).
func (s episodeShape) divided(div int) episodeShape {
	if div < 1 {
		div = 1
	}
	return episodeShape{Prompt: max(1, s.Prompt/div), Completion: max(1, s.Completion/div), Between: max(1, s.Between/div)}
}

// longest is the length of a 25-turn play's episode sample (first prompt, every completion and the
// tokens between them).
func (s episodeShape) longest() int { return s.Prompt + 25*s.Completion + 24*s.Between }

// paperEpisodes writes one step of a rollout of the given shape whose calls extend one another, as a
// chat template that keeps the history verbatim makes them. tokens counts every call's prompt and
// completion (what the lake holds, not the episode samples).
func paperEpisodes(b *testing.B, lk *lake.Lake, run string, cfg *config.Config, shape episodeShape) (turnCount, tokens int) {
	laketest.NewRun(b, lk, run, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	tokenRNG := rand.New(rand.NewPCG(3, 4))
	tok := func(n int) []int32 {
		out := make([]int32, n)
		for i := range out {
			out[i] = tokenRNG.Int32N(qwenVocab)
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
			history := tok(shape.Prompt)
			for turn := 0; turn < n; turn++ {
				if turn > 0 {
					history = append(history, tok(shape.Between)...)
				}
				completion := tok(shape.Completion)
				lp := make([]float32, len(completion))
				for i := range lp {
					lp[i] = -tokenRNG.Float32()
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
	laketest.Write(b, lk, key(schemas.EpisodesSpec.Name), episodes)
	laketest.Write(b, lk, key(schemas.TurnsSpec.Name), turns)
	laketest.Write(b, lk, lake.PartitionKey{Run: run, Table: schemas.LLMCallsSpec.Name, Step: step, Fragment: "rollout"}, calls)
	return len(turns), tokens
}

// BenchmarkEpisodeBatch assembles one step's episode samples and mixed batch at paper scale (read the
// step's episodes, turns and llm_calls from the lake, join each play's turns into one sample checking the
// prefix invariant, cut and pad to 192) beside DuckDB alone reading the same rows (the three tables
// joined, every token list decoded and summed). Reported: ms per assembly, ms per DuckDB read, and their
// ratio (assembly / DuckDB).
func BenchmarkEpisodeBatch(b *testing.B) {
	ctx := context.Background()
	lk := laketest.New(b)
	cfg := config.Default()
	cfg.Sample.RefreshEvery = 4
	cfg.GRPO.SampleUnit, cfg.GRPO.MixRoles, cfg.GRPO.AdvStd = config.SampleEpisode, true, config.AdvStdPopulation
	turnCount, tokens := paperEpisodes(b, lk, "paper", cfg, paperShape)
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
		asm, err := Assemble(ctx, lk, "paper", cfg, 1)
		if err != nil {
			b.Fatal(err)
		}
		batch := AssignMixedBatch(asm.Agent, nil, cfg.GRPO.GlobalBatch, cfg.Seed, 1, true)
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

// trainerBenchDiv divides the paper's sequence lengths for BenchmarkTrainerUpdateCPU.
var trainerBenchDiv = flag.Int("trainer-bench-div", 8,
	"BenchmarkTrainerUpdateCPU divides the paper's prompt, completion and between-turn lengths by this (1: paper scale)")

// BenchmarkTrainerUpdateCPU is the trainer's CPU path for one optimizer update of the tiny decoder
// (hidden 32, 2 layers, full fine-tuning, vocabulary 151,936 so the token ids are the rollout's own and
// the output projection and log-softmax cost what Qwen3's vocabulary costs) on one step's mixed batch
// under the qwen3-30b-a3b-games preset (episode samples, token-level TIS, seq-mean-token-mean, micro-batches
// of 16,384 tokens, AdamW): the 24 × 8 plays of BenchmarkEpisodeBatch assembled from the lake by Assemble
// and AssignMixedBatch as the grpo stage does, run by the torch Trainer (the stage's launcher) with CUDA
// hidden. The lengths are the paper's divided by -trainer-bench-div, which names the sub-benchmark
// (lengths_div8 by default: a 64-token first prompt, 8-token completions and 8 tokens between turns; 192
// samples, about 52k tokens; 3 to 7 minutes per update on two shared cores). At paper scale (-args
// -trainer-bench-div=1, about 400k sample tokens) one update would take the best part of an hour there,
// and its 16,384-token micro-batches hold float32 logits of some 12k response tokens × 151,936.
// Reported: samples, thousands of sample tokens (prompt and response) and of trained tokens, the
// trainer's own update seconds, trained and total tokens per second of it, the trainer's peak RSS, and
// the whole Train call (ns/op: batch file, interpreter start, model load, update, checkpoint).
func BenchmarkTrainerUpdateCPU(b *testing.B) {
	b.Run(fmt.Sprintf("lengths_div%d", max(1, *trainerBenchDiv)), func(b *testing.B) { benchmarkTrainerUpdate(b, *trainerBenchDiv) })
}

func benchmarkTrainerUpdate(b *testing.B, div int) {
	python := trainerPython(b)
	b.Setenv("CUDA_VISIBLE_DEVICES", "")
	ctx := context.Background()
	root := b.TempDir()
	lk := laketest.Open(b, filepath.Join(root, "lake"))
	shape := paperShape.divided(div)
	cfg, err := config.Preset("qwen3-30b-a3b-games")
	if err != nil {
		b.Fatal(err)
	}
	cfg.GRPO.Trainer, cfg.GRPO.Python, cfg.GRPO.Publish = config.TrainerTorch, python, config.PublishNone
	cfg.GRPO.TrainerMode, cfg.GRPO.ParamDType, cfg.GRPO.CPUOffload = config.TrainerPerStep, config.ParamFloat32, config.OffloadNone
	cfg.GRPO.Placement = config.PlacementSeparate
	cfg.GRPO.ModelPath = writeTinyModel(b, filepath.Join(root, "model"), qwenVocab, shape.longest())
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	paperEpisodes(b, lk, "paper", cfg, shape)
	const step = 1 // not a pool's last step: Agent samples only, 192 of them, so no cut and no padding
	asm, err := Assemble(ctx, lk, "paper", cfg, step)
	if err != nil {
		b.Fatal(err)
	}
	batch := AssignMixedBatch(asm.Agent, asm.Designer, cfg.GRPO.GlobalBatch, cfg.Seed, step, cfg.GRPO.KLBeta == 0)
	if len(batch.Rows) != cfg.GRPO.GlobalBatch {
		b.Fatalf("the batch has %d rows, want %d", len(batch.Rows), cfg.GRPO.GlobalBatch)
	}
	var sampleTokens, trainedTokens int
	for _, r := range batch.Rows {
		sampleTokens += len(r.PromptIDs) + len(r.ResponseIDs)
		for j := range r.ResponseIDs {
			if r.Trained(j) {
				trainedTokens++
			}
		}
	}
	var updateSeconds float64
	var peakBytes int64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A fresh checkpoint directory each time: a step that is already the latest version is not retrained.
		cfg.GRPO.CheckpointDir = filepath.Join(root, fmt.Sprintf("ckpt-%d", i))
		work := filepath.Join(root, fmt.Sprintf("work-%d", i))
		var log bytes.Buffer
		tr, err := NewTrainer(TrainerOptions{Config: cfg, Run: "paper", WorkDir: work, Log: &log})
		if err != nil {
			b.Fatal(err)
		}
		rows, err := tr.Train(ctx, step, batch.Rows)
		if err != nil {
			b.Fatalf("train: %v\nlog:\n%s", err, log.String())
		}
		if len(rows) != 1 || rows[0].Tokens != int64(trainedTokens) {
			b.Fatalf("train_metrics %+v, want one agent row of %d tokens", rows, trainedTokens)
		}
		b.StopTimer()
		perf := readUpdatePerformance(b, work, step)
		updateSeconds += perf.UpdateSeconds
		peakBytes = max(peakBytes, perf.PeakMemoryBytes)
		b.StartTimer()
	}
	updateSeconds /= float64(b.N)
	b.ReportMetric(float64(len(batch.Rows)), "samples")
	b.ReportMetric(float64(sampleTokens)/1e3, "Ktokens")
	b.ReportMetric(float64(trainedTokens)/1e3, "Ktrained")
	b.ReportMetric(updateSeconds, "update-s")
	b.ReportMetric(float64(trainedTokens)/updateSeconds, "trained-tok/s")
	b.ReportMetric(float64(sampleTokens)/updateSeconds, "total-tok/s")
	b.ReportMetric(float64(peakBytes)/(1<<20), "peak-rss-MiB")
}
