package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spadekit/spade/internal/bench"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/stage"
)

// MatchDeadline bounds the matching of one response's function calls against the expected ones; a
// response that takes longer scores 0.
var MatchDeadline = 5 * time.Second

// scorers holds the sandbox helpers a benchmark kind needs, started once per benchmark, and bounds the
// concurrent sandbox work (each helper call forks processes in one worker, whose process count is capped).
type scorers struct {
	judge  *bench.SympyJudge
	runner *bench.CodeRunner
	env    *envPlayer
	slots  chan struct{}
}

// newScorers starts what kind needs; plays is the most env_pool plays in flight at once (one loaded
// program each).
func newScorers(ctx context.Context, env *stage.Env, kind schemas.BenchKind, plays int) (*scorers, error) {
	s := &scorers{slots: make(chan struct{}, 8)}
	if kind != schemas.BenchMath && kind != schemas.BenchCode && kind != schemas.BenchEnvPool {
		return s, nil
	}
	pool, err := env.Pool(ctx)
	if err != nil {
		return nil, err
	}
	if kind == schemas.BenchEnvPool {
		// one loaded program per sandbox worker at a time (as rollout): a program holds its worker; with
		// sandbox.workers 0 there is a worker for every play
		workers, err := stage.FitPool(pool, plays, 1)
		if err != nil {
			return nil, fmt.Errorf("eval: %w", err)
		}
		s.slots = make(chan struct{}, max(1, workers))
		s.env, err = newEnvPlayer(pool, env.Config)
		return s, err
	}
	if kind == schemas.BenchMath {
		s.judge = bench.NewSympyJudge(pool)
	} else {
		s.runner = bench.NewCodeRunner(pool)
	}
	return s, nil
}

func (s *scorers) close() {
	if s.judge != nil {
		s.judge.Close()
	}
	if s.runner != nil {
		s.runner.Close()
	}
}

// acquire takes a sandbox slot; release returns it.
func (s *scorers) acquire(ctx context.Context) error {
	select {
	case s.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *scorers) release() { <-s.slots }

// judgeWithSlots is a bench.Equivalence that takes a sandbox slot per comparison.
type judgeWithSlots struct{ s *scorers }

func (j judgeWithSlots) Equivalent(ctx context.Context, a, b string) (bool, string, error) {
	if err := j.s.acquire(ctx); err != nil {
		return false, "", err
	}
	defer j.s.release()
	return j.s.judge.Equivalent(ctx, a, b)
}

// score scores one completion of item asked with prompt p.
func (s *scorers) score(ctx context.Context, item schemas.BenchItemRow, p bench.Asked, comp *llm.Completion) (float64, string, string, error) {
	switch item.Kind {
	case schemas.BenchMath:
		return bench.ScoreMath(ctx, comp.Text, item.Answer, judgeWithSlots{s})
	case schemas.BenchChoice:
		score, letter, detail := bench.ScoreChoice(comp.Text, p.Shown, item.Answer)
		return score, letter, detail, nil
	case schemas.BenchCode:
		tests, meta, err := bench.ParseCode(item.Tests, item.Meta)
		if err != nil {
			return 0, "", "", err
		}
		if err := s.acquire(ctx); err != nil {
			return 0, "", "", err
		}
		defer s.release()
		return bench.ScoreCode(ctx, s.runner, comp.Text, tests, meta)
	case schemas.BenchFunctionCall:
		want, err := bench.ParseExpected(item.Answer)
		if err != nil {
			return 0, "", "", fmt.Errorf("answer: %w", err)
		}
		var got []bench.Call
		for _, tc := range comp.ToolCalls {
			var args map[string]any
			dec := json.NewDecoder(bytesReader(tc.Function.Arguments))
			dec.UseNumber()
			if err := dec.Decode(&args); err != nil {
				return 0, "", fmt.Sprintf("call %s: arguments are not a JSON object", tc.Function.Name), nil
			}
			got = append(got, bench.Call{Name: tc.Function.Name, Args: args})
		}
		if len(got) == 0 {
			got = bench.ParseTextCalls(comp.Text)
		}
		extracted, _ := json.Marshal(got)
		mctx, cancel := context.WithTimeout(ctx, MatchDeadline)
		defer cancel()
		score, detail, err := bench.ScoreFunctionCallsContext(mctx, got, want, p.Ordered)
		if err != nil {
			if ctx.Err() != nil {
				return 0, "", "", ctx.Err()
			}
			return 0, string(extracted), fmt.Sprintf("matching the calls took longer than %v", MatchDeadline), nil
		}
		return score, string(extracted), detail, nil
	}
	return 0, "", "", fmt.Errorf("no scorer for kind %q", item.Kind)
}
