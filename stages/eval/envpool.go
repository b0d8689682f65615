package eval

import (
	"context"
	"fmt"
	"sync"
	"text/template"

	"github.com/spadekit/spade/internal/bench"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/internal/play"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// envPlayer plays env_pool items: each sample is one episode of the item's program, loaded in the
// sandbox, played by the Agent without the hint (internal/play, the loop rollout plays), and scored by
// the episode's outcome (internal/outcome under the run's outcome.value: its success as 0/1, or its
// return clipped to [0, 1]). An episode that ends in env_error or timeout (a program that does not load,
// crashes, hangs or breaks the sandbox's limits) scores 0, whatever outcome.exclude_ended_by says: the
// benchmark asks whether the Agent solved the env.
type envPlayer struct {
	pool  *sandbox.Pool
	rules outcome.Rules

	mu    sync.Mutex
	tmpls map[schemas.Setting]*template.Template
	// calls maps an env_pool row's call id (its last turn's) to every call of its episode, so the row's
	// tokens and latency sum the episode's calls (runBench, episodeUsage).
	calls map[string][]string
}

func newEnvPlayer(pool *sandbox.Pool, cfg *config.Config) (*envPlayer, error) {
	rules, err := outcome.FromConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &envPlayer{pool: pool, rules: rules, tmpls: map[schemas.Setting]*template.Template{}, calls: map[string][]string{}}, nil
}

// template returns the Agent template of a setting under the run's rollout settings.
func (p *envPlayer) template(cfg *config.Config) (*template.Template, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if t, ok := p.tmpls[cfg.Setting]; ok {
		return t, nil
	}
	t, err := play.LoadAgentTemplate(cfg.Setting, cfg.Rollout.ActionFormat, cfg.Generate.HintMode, cfg.Rollout.PromptFile)
	if err != nil {
		return nil, err
	}
	p.tmpls[cfg.Setting] = t
	return t, nil
}

// playItem plays sample `sample` of an env_pool item and returns its row (call fields from the last
// turn's call; runBench sums the episode's usage).
func (e *evaluator) playItem(ctx context.Context, item schemas.BenchItemRow, sample int) (schemas.EvalResultRow, error) {
	p := e.scorers.env
	meta, err := bench.ParseEnvPoolMeta(item.Meta)
	if err != nil {
		return schemas.EvalResultRow{}, fmt.Errorf("item %s: %w", item.ItemID, err)
	}
	cfg := *e.env.Config
	if meta.Setting != "" {
		cfg.Setting = meta.Setting // the checks the program passed: tools programs are played with tools()
	}
	cfg.LLM.Agent.MaxTokens = e.agentMaxTokens
	// A benchmark's env is played as it is: the load-time validation before a play is the training
	// loader's, not the benchmark's.
	cfg.Rollout.InstanceWarmup = config.WarmupNone
	tmpl, err := p.template(&cfg)
	if err != nil {
		return schemas.EvalResultRow{}, err
	}
	key := fmt.Sprintf("eval/%s/%s/%d", e.bench, item.ItemID, sample)
	ep := schemas.EpisodeRow{Step: e.step, EnvID: item.ItemID, Skill: meta.Skill, EpisodeID: key, Index: int32(sample),
		Seed: bench.EnvPoolSeed(cfg.Seed, e.bench, item.ItemID, sample)}
	if err := e.scorers.acquire(ctx); err != nil {
		return schemas.EvalResultRow{}, err
	}
	prog, loadErr := p.pool.Load(ctx, item.Question)
	res, err := play.Play(ctx, play.Episode{Cfg: &cfg, Client: e.client, Tmpl: tmpl, Row: ep}, prog, loadErr)
	if prog != nil {
		prog.Close()
	}
	e.scorers.release()
	if err != nil {
		return schemas.EvalResultRow{}, err
	}
	got := res.Episode
	row := schemas.EvalResultRow{Step: e.step, Bench: e.bench, ItemID: item.ItemID, Kind: item.Kind, Sample: int32(sample),
		Response: play.Transcript(got, res.Turns), WeightsVersion: e.weights, Model: e.model,
		Temperature: e.sampling.Temperature, TopP: e.sampling.TopP, MaxTokens: int32(e.agentMaxTokens)}
	var ids []string
	for _, t := range res.Turns {
		ids = append(ids, t.CallID)
		if t.Action != "" {
			row.Extracted = t.Action
		}
	}
	if len(ids) > 0 {
		row.CallID = ids[len(ids)-1]
		p.mu.Lock()
		p.calls[row.CallID] = ids
		p.mu.Unlock()
	}
	if got.EndedBy == schemas.EndedAgentError {
		row.Error = got.Error
	}
	row.Detail = fmt.Sprintf("%s after %d turns, success=%t, return=%g", got.EndedBy, got.Turns, got.Success, got.Return)
	switch got.EndedBy {
	case schemas.EndedEnvError, schemas.EndedTimeout:
		row.Detail += " (the env failed: score 0)"
	default:
		row.Score = min(1, max(0, p.rules.Of(&got)))
	}
	return row, nil
}

// episodeUsage sets each env_pool row's tokens and latency to the sums over its episode's calls.
func episodeUsage(rows []schemas.EvalResultRow, calls []llm.Call, p *envPlayer) {
	byID := make(map[string]*llm.Call, len(calls))
	for i := range calls {
		byID[calls[i].CallID] = &calls[i]
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range rows {
		for _, id := range p.calls[rows[i].CallID] {
			if c := byID[id]; c != nil {
				rows[i].PromptTokens += c.PromptTokens
				rows[i].CompletionTokens += c.CompletionTokens
				rows[i].LatencyMS += c.LatencyMS
			}
		}
	}
}
