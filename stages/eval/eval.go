package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/spadekit/spade/internal/bench"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// Name is the stage's command name.
const Name stage.Name = "eval"

// Sampling is how one benchmark is sampled.
type Sampling struct {
	Samples     int
	Temperature float64
	TopP        float64
	MaxTokens   int
}

// DefaultSampling returns the authors' evaluation settings per kind (eval_offline/configs/games.yaml
// and tool_use.yaml of the SPADE repository): AIME 64 samples at temperature 1.0, top-p 0.95, 32,768
// tokens; GPQA-Diamond 8 at 0.7, 0.95, 32,768; LiveCodeBench 1 at 0.2, 0.95, 16,384; BFCL 1 at 0.0.
// env_pool (spade's, no published setting): 1 episode at 0.0 with the run's llm.agent.max_tokens, so
// the context budget of an episode is the rollout's.
func DefaultSampling(kind schemas.BenchKind) Sampling {
	switch kind {
	case schemas.BenchMath:
		return Sampling{Samples: 64, Temperature: 1.0, TopP: 0.95, MaxTokens: 32768}
	case schemas.BenchChoice:
		return Sampling{Samples: 8, Temperature: 0.7, TopP: 0.95, MaxTokens: 32768}
	case schemas.BenchCode:
		return Sampling{Samples: 1, Temperature: 0.2, TopP: 0.95, MaxTokens: 16384}
	case schemas.BenchEnvPool:
		return Sampling{Samples: 1, Temperature: 0, TopP: 1} // max tokens: the run's llm.agent.max_tokens
	default:
		return Sampling{Samples: 1, Temperature: 0, TopP: 1, MaxTokens: 16384}
	}
}

// SamplingFor applies the run's eval.* overrides (and samples, when > 0) to the kind's defaults.
func SamplingFor(kind schemas.BenchKind, cfg config.Eval, samples int) Sampling {
	s := DefaultSampling(kind)
	if cfg.Samples > 0 {
		s.Samples = cfg.Samples
	}
	if samples > 0 {
		s.Samples = samples
	}
	if cfg.Temperature > 0 {
		s.Temperature = cfg.Temperature
	}
	if cfg.TopP > 0 {
		s.TopP = cfg.TopP
	}
	if cfg.MaxTokens > 0 {
		s.MaxTokens = cfg.MaxTokens
	}
	return s
}

// Stage evaluates Benches at a step.
type Stage struct {
	// Benches names the benchmarks (empty: the run's eval.benches).
	Benches []string
	// Samples overrides the samples per item (0: eval.samples, else the kind's default).
	Samples int
	// Periodic makes the stage due only every eval.every steps (Periodic), as in `spade run`'s list;
	// `spade eval` leaves it off and evaluates at any step.
	Periodic bool
}

// Periodic reports whether `spade run` evaluates at step: eval.every > 0 and step a multiple of it
// (step 0 included: the weights the run starts from). The evaluation calls the weights the step's
// stages call (stage.WeightsVersion), whatever its place in the step.
func Periodic(cfg *config.Config, step int64) bool {
	return cfg.Eval.Every > 0 && step%int64(cfg.Eval.Every) == 0
}

// Name implements stage.Stage.
func (Stage) Name() stage.Name { return Name }

// Reads implements stage.Stage: the benchmarks live outside the run and are checked by Run.
func (Stage) Reads() []stage.Input { return nil }

// Writes implements stage.Stage. The marker is never committed as a plain partition: each benchmark
// chunk commits a fragment, so Execute always calls Run, which skips the committed chunks itself.
func (Stage) Writes() []string {
	return []string{schemas.LLMCallsSpec.Name, schemas.EvalResultsSpec.Name}
}

// Due implements stage.Stage: any step, or with s.Periodic every eval.every steps (Periodic).
func (s Stage) Due(cfg *config.Config, step int64) bool {
	return !s.Periodic || Periodic(cfg, step)
}

// Run implements stage.Stage.
func (s Stage) Run(ctx context.Context, env *stage.Env, step int64) (string, error) {
	benches := s.Benches
	if len(benches) == 0 {
		benches = config.SplitList(env.Config.Eval.Benches)
	}
	if len(benches) == 0 {
		return "", fmt.Errorf("eval: %w: name the benchmarks (--bench NAME[,NAME] or eval.benches)", stage.ErrInvalid)
	}
	var parts []string
	for _, name := range benches {
		sum, err := runBench(ctx, env, step, name, s.Samples)
		if err != nil {
			return "", fmt.Errorf("eval: %s: %w", name, err)
		}
		parts = append(parts, sum)
	}
	return strings.Join(parts, "; "), nil
}

// benchSummary accumulates what one benchmark's chunks did.
type benchSummary struct {
	chunks, skipped, rows int
	score                 float64
}

func runBench(ctx context.Context, env *stage.Env, step int64, name string, samples int) (string, error) {
	items, err := bench.Items(ctx, env.Lake, name)
	if err != nil {
		return "", err
	}
	kind := items[0].Kind
	sampling := SamplingFor(kind, env.Config.Eval, samples)
	weights, base, err := env.Client(ctx, step, schemas.RoleAgent)
	if err != nil {
		return "", err
	}
	settings := base.Settings()
	roles := map[schemas.Role]llm.RoleSettings{}
	for r, rs := range settings.Roles {
		roles[r] = rs
	}
	agent := roles[schemas.RoleAgent]
	agent.Temperature, agent.TopP = sampling.Temperature, sampling.TopP
	if sampling.MaxTokens > 0 {
		agent.MaxTokens = sampling.MaxTokens
	}
	roles[schemas.RoleAgent] = agent
	settings.Roles = roles
	client, err := llm.New(ctx, settings, llm.LakeReplayLoader(env.Lake))
	if err != nil {
		return "", err
	}
	chunkItems := env.Config.Eval.ChunkItems
	if chunkItems <= 0 {
		chunkItems = 100
	}
	sc, err := newScorers(ctx, env, kind, min(chunkItems, len(items))*sampling.Samples)
	if err != nil {
		return "", err
	}
	defer sc.close()
	redo := env.Force && !env.Resume // Resume forces only the stage; committed chunks stay
	e := &evaluator{env: env, step: step, bench: name, kind: kind, sampling: sampling, weights: weights,
		model: agent.Model, client: client, scorers: sc, agentMaxTokens: agent.MaxTokens}
	chunks := (len(items) + chunkItems - 1) / chunkItems
	mine := 0 // this shard's items
	for c := env.Shard.Index; c < chunks; c += env.Shard.Shards() {
		mine += min((c+1)*chunkItems, len(items)) - c*chunkItems
	}
	e.progress = newEvalProgress(env.Progress, "eval "+name, mine*sampling.Samples, client)
	defer e.progress.finish()
	var sum benchSummary
	for c := 0; c*chunkItems < len(items); c++ {
		if c%env.Shard.Shards() != env.Shard.Index {
			continue
		}
		fragment := schemas.EvalFragment(name, c)
		done, err := env.Lake.Committed(ctx, lake.PartitionKey{Run: env.Run, Table: schemas.EvalResultsSpec.Name, Step: step, Fragment: fragment})
		if err != nil {
			return "", err
		}
		if done && !redo {
			sum.skipped++
			continue
		}
		chunk := items[c*chunkItems : min((c+1)*chunkItems, len(items))]
		rows, err := e.chunk(ctx, chunk)
		if err != nil {
			return "", err
		}
		calls := client.TakeCalls()
		hashes := make(map[string]string, len(calls))
		for _, call := range calls {
			hashes[call.CallID] = call.RequestHash
		}
		for i := range rows {
			rows[i].PromptSHA256 = hashes[rows[i].CallID]
			sum.score += rows[i].Score
		}
		if sc.env != nil {
			episodeUsage(rows, calls, sc.env)
		}
		// Each chunk commits in a transaction of its own (record stage = the chunk's fragment), not in
		// the stage's: a killed evaluation keeps the chunks it finished and resumes after them. Forced,
		// it replaces the chunk a forced re-run asks again.
		chunkTx := env.Lake.Begin(lake.TxnSpec{Run: env.Run, Stage: fragment, Step: step, Force: true})
		if err := llm.WriteCalls(ctx, chunkTx, step, fragment, calls, lake.WriteOptions{}); err != nil {
			chunkTx.Abort(context.WithoutCancel(ctx))
			return "", err
		}
		key := lake.PartitionKey{Run: env.Run, Table: schemas.EvalResultsSpec.Name, Step: step, Fragment: fragment}
		if _, err := lake.WriteRows(ctx, chunkTx, key, rows, lake.WriteOptions{}); err != nil {
			chunkTx.Abort(context.WithoutCancel(ctx))
			return "", err
		}
		if _, err := chunkTx.Commit(context.WithoutCancel(ctx)); err != nil {
			return "", err
		}
		sum.chunks++
		sum.rows += len(rows)
		env.Logger().Info("eval: chunk committed", "bench", name, "chunk", c, "rows", len(rows))
	}
	mean := 0.0
	if sum.rows > 0 {
		mean = sum.score / float64(sum.rows)
	}
	return fmt.Sprintf("%s: %d chunks, %d rows (mean score %.3f), %d chunks already committed; %d samples at temperature %g, weights %q",
		name, sum.chunks, sum.rows, mean, sum.skipped, sampling.Samples, sampling.Temperature, weights), nil
}

// evaluator asks and scores the samples of one benchmark.
type evaluator struct {
	env      *stage.Env
	step     int64
	bench    string
	kind     schemas.BenchKind
	sampling Sampling
	weights  string
	model    string
	client   *llm.Client
	scorers  *scorers
	// agentMaxTokens is the Agent's max_tokens as sent (env_pool episodes budget their context with it).
	agentMaxTokens int
	// progress counts the samples scored.
	progress *evalProgress
}

// chunk asks every sample of items concurrently (the client bounds calls in flight) and returns the
// scored rows ordered by item and sample.
func (e *evaluator) chunk(ctx context.Context, items []schemas.BenchItemRow) ([]schemas.EvalResultRow, error) {
	n := len(items) * e.sampling.Samples
	rows := make([]schemas.EvalResultRow, n)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	jobs := make(chan int)
	workers := n // the calls follow the samples, each with one call at a time, up to llm.max_in_flight
	if limit := e.client.Settings().MaxInFlight; limit > 0 {
		workers = min(n, limit)
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				row, err := e.sample(ctx, items[j/e.sampling.Samples], j%e.sampling.Samples)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				rows[j] = row
				e.progress.sampleDone()
			}
		}()
	}
	for j := 0; j < n; j++ {
		select {
		case jobs <- j:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].ItemID != rows[j].ItemID {
			return rows[i].ItemID < rows[j].ItemID
		}
		return rows[i].Sample < rows[j].Sample
	})
	return rows, nil
}

// sample asks one sample of one item and scores it.
func (e *evaluator) sample(ctx context.Context, item schemas.BenchItemRow, sample int) (schemas.EvalResultRow, error) {
	if item.Kind == schemas.BenchEnvPool {
		return e.playItem(ctx, item, sample)
	}
	p, err := bench.Prompt(item, e.env.Config.Seed, sample)
	if err != nil {
		return schemas.EvalResultRow{}, fmt.Errorf("item %s: %w", item.ItemID, err)
	}
	req := llm.Request{Role: schemas.RoleAgent, Step: e.step, Key: fmt.Sprintf("eval/%s/%s/%d", e.bench, item.ItemID, sample),
		Messages: p.Messages, Tools: p.Tools}
	comp, err := e.client.Chat(ctx, req)
	if err != nil {
		return schemas.EvalResultRow{}, err
	}
	row := schemas.EvalResultRow{Step: e.step, Bench: e.bench, ItemID: item.ItemID, Kind: item.Kind, Sample: int32(sample),
		Response: comp.Text, CallID: comp.CallID, ShuffleSeed: p.ShuffleSeed, PromptTokens: comp.PromptTokens,
		CompletionTokens: comp.CompletionTokens, LatencyMS: comp.LatencyMS, WeightsVersion: e.weights, Model: e.model,
		Temperature: e.sampling.Temperature, TopP: e.sampling.TopP, MaxTokens: int32(e.sampling.MaxTokens), Error: comp.Err}
	if len(comp.ToolCalls) > 0 {
		b, _ := json.Marshal(comp.ToolCalls)
		row.Response += "\n" + string(b)
	}
	if comp.Failed() {
		row.Detail = "call failed"
		return row, nil
	}
	row.Score, row.Extracted, row.Detail, err = e.scorers.score(ctx, item, p, comp)
	if err != nil {
		return schemas.EvalResultRow{}, fmt.Errorf("item %s sample %d: %w", item.ItemID, sample, err)
	}
	return row, nil
}
