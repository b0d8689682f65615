package run

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/spadekit/spade/internal/axis"
	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/outcome"
	"github.com/spadekit/spade/schemas"
)

// StepSummary is what `spade run` says about a step once its stages are done: the figures a researcher
// watches, read back from the lake (so a resumed step reads the same as one just run).
type StepSummary struct {
	// Step is the step; PoolStep the refresh step whose pool it played.
	Step, PoolStep int64
	// Accepted counts the envs the gate accepted into the pool (envs at PoolStep).
	Accepted int
	// NoHint and Hint are the Agent's solve rates over the step's counted episodes without and with the
	// hint (outcome rules of the run), NaN when the side has no counted episode.
	NoHint, Hint float64
	// Regret is the mean over the step's envs with both sides counted of r̄(e|h) − r̄(e) (the per-step
	// figure of regret_curve), NaN with no such env; RegretEnvs counts them.
	Regret     float64
	RegretEnvs int
	// Loss is the GRPO loss of each trained role at the step (train_metrics), absent when not trained.
	Loss map[schemas.Role]float64
	// AgentTokens sums the step's episodes' tokens; DesignerTokens the prompt and completion tokens of
	// the Designer's llm_calls at the step (non-zero at refresh steps: generation and regenerations).
	AgentTokens, DesignerTokens int64
	// Elapsed is the wall time of the stages run at the step (0 when every stage was already done).
	Elapsed time.Duration
}

// Summarize reads a step's summary from the lake. A table the step has not committed contributes
// nothing (a step run with --only, or before training, has no loss).
func Summarize(ctx context.Context, lk *lake.Lake, run string, cfg *config.Config, step int64) (StepSummary, error) {
	s := StepSummary{Step: step, PoolStep: cfg.PoolStep(step), Loss: map[schemas.Role]float64{}}
	absent := func(err error) bool { return errors.Is(err, lake.ErrNotCommitted) }
	envs, err := lake.ReadStep[schemas.EnvRow](ctx, lk, run, schemas.EnvsSpec.Name, s.PoolStep)
	if err != nil && !absent(err) {
		return s, err
	}
	s.Accepted = len(envs)
	episodes, err := lake.ReadStep[schemas.EpisodeRow](ctx, lk, run, schemas.EpisodesSpec.Name, step)
	if err != nil && !absent(err) {
		return s, err
	}
	rules, err := outcome.FromConfig(cfg)
	if err != nil {
		return s, err
	}
	all := rules.Summarize(episodes)
	s.NoHint, s.Hint = rate(all.NoHint), rate(all.Hint)
	sum := 0.0
	for _, e := range rules.ByStepEnv(episodes) {
		if e.NoHint.Counted > 0 && e.Hint.Counted > 0 {
			sum += e.Hint.MeanOutcome - e.NoHint.MeanOutcome
			s.RegretEnvs++
		}
	}
	s.Regret = math.NaN()
	if s.RegretEnvs > 0 {
		s.Regret = sum / float64(s.RegretEnvs)
	}
	for _, e := range episodes {
		s.AgentTokens += e.Tokens
	}
	train, err := lake.ReadStep[schemas.TrainMetricsRow](ctx, lk, run, schemas.TrainMetricsSpec.Name, step)
	if err != nil && !absent(err) {
		return s, err
	}
	for _, r := range train {
		s.Loss[r.Role] = r.Loss
	}
	// The Designer's calls: every llm_calls part of the step but rollout's and the evaluations' (the
	// Agent's, by far the largest; the episodes already sum the rollout's tokens).
	parts, err := lk.StepPartitions(ctx, run, schemas.LLMCallsSpec.Name, step)
	if err != nil {
		return s, err
	}
	for _, p := range parts {
		if p.Key.Fragment == schemas.FragmentRollout || strings.HasPrefix(p.Key.Fragment, "eval-") {
			continue
		}
		calls, err := lake.ReadRows[schemas.LLMCallRow](ctx, lk, p.Key)
		if err != nil {
			return s, err
		}
		for _, c := range calls {
			if c.Role == schemas.RoleDesigner {
				s.DesignerTokens += int64(c.PromptTokens + c.CompletionTokens)
			}
		}
	}
	return s, nil
}

func rate(side outcome.Side) float64 {
	if side.Counted == 0 {
		return math.NaN()
	}
	return side.SolveRate
}

// Line is the step's one line: "step 12 (pool 12): 24 envs accepted · solve rate 31.2% unhinted / 58.0%
// hinted · regret +0.268 · loss agent 0.0123, designer 0.0456 · tokens 1.23M agent / 45.6k designer ·
// 41.3s". A figure the step lacks reads "—".
func (s StepSummary) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d (pool %d): %d envs accepted", s.Step, s.PoolStep, s.Accepted)
	fmt.Fprintf(&b, " · solve rate %s unhinted / %s hinted", percent(s.NoHint), percent(s.Hint))
	if s.RegretEnvs > 0 {
		fmt.Fprintf(&b, " · regret %+.3f over %d envs", s.Regret, s.RegretEnvs)
	} else {
		b.WriteString(" · regret —")
	}
	var losses []string
	for _, role := range schemas.TrainedRoles() {
		if l, ok := s.Loss[role]; ok {
			losses = append(losses, fmt.Sprintf("%s %s", role, axis.Value(l)))
		}
	}
	if len(losses) == 0 {
		losses = []string{"—"}
	}
	fmt.Fprintf(&b, " · loss %s", strings.Join(losses, ", "))
	fmt.Fprintf(&b, " · tokens %s agent / %s designer", axis.Value(float64(s.AgentTokens)), axis.Value(float64(s.DesignerTokens)))
	if s.Elapsed > 0 {
		fmt.Fprintf(&b, " · %.1fs", s.Elapsed.Seconds())
	} else {
		b.WriteString(" · already done")
	}
	return b.String()
}

func percent(v float64) string {
	if v != v {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}
