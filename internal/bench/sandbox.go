package bench

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spadekit/spade/internal/sandbox"
)

//go:embed code_runner.py
var codeRunnerSource string

//go:embed sympy_judge.py
var sympyJudgeSource string

// loaded is a trusted helper program loaded into the sandbox pool once and reloaded when its worker was
// tainted (a call that timed out kills the instance and marks its worker for replacement).
type loaded struct {
	pool *sandbox.Pool
	code string

	mu   sync.Mutex
	prog *sandbox.Program
}

// eval runs method(args) on a fresh instance of the program, bounded by timeout.
func (l *loaded) eval(ctx context.Context, timeout time.Duration, method string, args ...any) (json.RawMessage, error) {
	l.mu.Lock()
	if l.prog != nil && l.prog.Tainted() {
		l.prog.Close()
		l.prog = nil
	}
	if l.prog == nil {
		p, err := l.pool.LoadTrusted(ctx, l.code) // (it compiles and runs answers itself)
		if err != nil {
			l.mu.Unlock()
			return nil, fmt.Errorf("bench: load helper: %w", err)
		}
		l.prog = p
	}
	prog := l.prog
	l.mu.Unlock()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		l.mu.Lock()
		if l.prog == prog { // the worker died: load again next time
			l.prog.Close()
			l.prog = nil
		}
		l.mu.Unlock()
		return nil, err
	}
	defer env.Close()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return env.Eval(cctx, method, args...)
}

func (l *loaded) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.prog != nil {
		l.prog.Close()
		l.prog = nil
	}
}

// SympyJudge decides math equivalence with sympy in the sandbox (sympy_judge.py); it implements
// Equivalence. A comparison that takes longer than Timeout counts as not equivalent.
type SympyJudge struct {
	// Timeout bounds one comparison (default 10 s).
	Timeout time.Duration
	l       loaded
}

// NewSympyJudge returns a judge running in pool; the program loads on first use.
func NewSympyJudge(pool *sandbox.Pool) *SympyJudge {
	return &SympyJudge{Timeout: 10 * time.Second, l: loaded{pool: pool, code: sympyJudgeSource}}
}

// Equivalent implements Equivalence.
func (j *SympyJudge) Equivalent(ctx context.Context, answer, reference string) (bool, string, error) {
	raw, err := j.l.eval(ctx, j.Timeout, "equivalent", answer, reference)
	if err != nil {
		if ctx.Err() != nil {
			return false, "", ctx.Err()
		}
		var se *sandbox.Error
		if errors.As(err, &se) {
			return false, "sympy failed: " + firstLine(se.Error()), nil
		}
		return false, "", err
	}
	var out []any
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 2 {
		return false, "", fmt.Errorf("bench: sympy judge: bad reply %s", raw)
	}
	eq, _ := out[0].(bool)
	detail, _ := out[1].(string)
	return eq, detail, nil
}

// Close releases the judge's worker.
func (j *SympyJudge) Close() { j.l.close() }

// CodeRunner runs candidate programs against their tests in the sandbox (code_runner.py).
type CodeRunner struct {
	// TestTimeout bounds one test's wall time (default 6 s, LiveCodeBench's); Budget bounds one
	// program's tests together (default: a second less than the pool's reset deadline, which bounds
	// the whole call); OutputCap bounds one test's stdout (default 1 MiB).
	TestTimeout time.Duration
	Budget      time.Duration
	OutputCap   int
	l           loaded
}

// NewCodeRunner returns a runner in pool; the runner program loads on first use.
func NewCodeRunner(pool *sandbox.Pool) *CodeRunner {
	budget := max(pool.Options().ResetTimeout-time.Second, time.Second)
	return &CodeRunner{TestTimeout: min(6*time.Second, budget), Budget: budget, OutputCap: 1 << 20,
		l: loaded{pool: pool, code: codeRunnerSource}}
}

// CodeResult is how a program did on its tests.
type CodeResult struct {
	// Passed counts the tests passed before the first failure (all of them when Failed is -1).
	Passed int `json:"passed"`
	// Failed is the index of the first failing test, or -1.
	Failed int `json:"failed"`
	// Why says why it failed ("wrong output", "timeout", "runtime error (exit 1)", ...).
	Why string `json:"why"`
}

// Run runs program against tests in order, stopping at the first failure.
func (r *CodeRunner) Run(ctx context.Context, program string, tests []CodeTest, funcName string) (CodeResult, error) {
	raw, err := r.l.eval(ctx, r.Budget+time.Second, "run", program, tests, funcName,
		r.TestTimeout.Seconds(), r.Budget.Seconds(), r.OutputCap)
	if err != nil {
		if ctx.Err() != nil {
			return CodeResult{}, ctx.Err()
		}
		var se *sandbox.Error
		if errors.As(err, &se) {
			return CodeResult{Failed: 0, Why: "sandbox: " + firstLine(se.Error())}, nil
		}
		return CodeResult{}, err
	}
	var res CodeResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return CodeResult{}, fmt.Errorf("bench: code runner: bad reply %s", raw)
	}
	return res, nil
}

// Close releases the runner's worker.
func (r *CodeRunner) Close() { r.l.close() }

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
