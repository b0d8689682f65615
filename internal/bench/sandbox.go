package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

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
// Equivalence. The answer text is parsed by a grammar of its own, never evaluated, and compared in a
// process whose only descriptor is a pipe to the instance; Go accepts a verdict only as the reply of the
// instance it forked for the call (the sandbox checks the sender), as a JSON object of exactly the keys
// nonce, equal and detail, carrying the nonce it sent. A comparison that takes longer than Timeout
// counts as not equivalent.
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
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return false, "", err
	}
	nonce := hex.EncodeToString(b[:])
	raw, err := j.l.eval(ctx, j.Timeout+2*time.Second, "equivalent", answer, reference, nonce, j.Timeout.Seconds())
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
	return readVerdict(raw, nonce)
}

// readVerdict reads the judge's reply: exactly {"nonce": nonce, "equal": bool, "detail": string}, each
// key once. Anything else is no verdict (not equivalent).
func readVerdict(raw json.RawMessage, nonce string) (bool, string, error) {
	var v struct {
		Nonce  *string `json:"nonce"`
		Equal  *bool   `json:"equal"`
		Detail *string `json:"detail"`
	}
	if err := strictObject(raw, &v, "nonce", "equal", "detail"); err != nil || v.Nonce == nil || v.Equal == nil || v.Detail == nil {
		return false, "sympy judge: the reply is not a verdict", nil
	}
	if *v.Nonce != nonce {
		return false, "sympy judge: the reply is not for this comparison", nil
	}
	return *v.Equal, firstLine(*v.Detail), nil
}

// strictObject decodes raw, a JSON object with exactly keys (each once, nothing after it), into v.
func strictObject(raw []byte, v any, keys ...string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return errors.New("not an object")
	}
	seen := map[string]bool{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		k, _ := t.(string)
		if seen[k] || !slices.Contains(keys, k) {
			return fmt.Errorf("key %q repeated or unknown", k)
		}
		seen[k] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if len(seen) != len(keys) {
		return errors.New("keys missing")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the object")
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.DisallowUnknownFields()
	return d.Decode(v)
}

// Close releases the judge's worker.
func (j *SympyJudge) Close() { j.l.close() }

// CodeRunner runs candidate programs against their tests in the sandbox (code_runner.py). Each answer
// gets a program (a template process) and an instance of its own, released (its worker cleaned) before
// the next answer. The instance forks a forker before it sees any test, and for each test sends it only
// that test's input; the forker forks the candidate, which holds its input (as stdin) and no descriptor
// but stdin, stdout and /dev/null, and kills every process the candidate started once the test ends.
// The instance replies with what the candidate printed; the expected outputs stay here: Go compares them.
type CodeRunner struct {
	// TestTimeout bounds one test's wall time (default 6 s, LiveCodeBench's); Budget bounds one
	// program's tests together (default: a second less than the pool's reset deadline); OutputCap
	// bounds one test's stdout (default 1 MiB).
	TestTimeout time.Duration
	Budget      time.Duration
	OutputCap   int
	pool        *sandbox.Pool
}

// NewCodeRunner returns a runner in pool.
func NewCodeRunner(pool *sandbox.Pool) *CodeRunner {
	budget := max(pool.Options().ResetTimeout-time.Second, time.Second)
	return &CodeRunner{TestTimeout: min(6*time.Second, budget), Budget: budget, OutputCap: 1 << 20, pool: pool}
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

// Run runs program against tests in order, stopping at the first failure or when the budget is spent.
func (r *CodeRunner) Run(ctx context.Context, program string, tests []CodeTest, funcName string) (CodeResult, error) {
	prog, err := r.pool.LoadTrusted(ctx, codeRunnerSource) // (it compiles and runs the candidate itself)
	if err != nil {
		return CodeResult{}, r.sandboxFailure(ctx, err)
	}
	defer prog.Close()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		return CodeResult{}, r.sandboxFailure(ctx, err)
	}
	defer env.Close()
	if _, err := env.Eval(ctx, "start", program, funcName); err != nil {
		var se *sandbox.Error
		if errors.As(err, &se) && ctx.Err() == nil {
			return CodeResult{Failed: 0, Why: "sandbox: " + firstLine(se.Error())}, nil
		}
		return CodeResult{}, r.sandboxFailure(ctx, err)
	}
	began := time.Now()
	for i, test := range tests {
		if err := ctx.Err(); err != nil {
			return CodeResult{}, err
		}
		left := r.Budget - time.Since(began)
		if left <= 50*time.Millisecond {
			return CodeResult{Passed: i, Failed: i, Why: "time budget spent"}, nil
		}
		got, why, err := r.runTest(ctx, env, test, min(r.TestTimeout, left))
		if err != nil {
			return CodeResult{}, err
		}
		if why == "" && !sameOutput(test.TestType, got, test.Output) {
			why = "wrong output"
		}
		if why != "" {
			return CodeResult{Passed: i, Failed: i, Why: why}, nil
		}
	}
	return CodeResult{Passed: len(tests), Failed: -1}, nil
}

// testReply is code_runner.py's reply to run.
type testReply struct {
	Status string `json:"status"`
	Code   int    `json:"code"`
	Size   int    `json:"size"`
	Chunk  string `json:"chunk"`
}

// runTest runs one test on the answer's instance; it returns the program's stdout, or why the test
// failed before its output could be compared.
func (r *CodeRunner) runTest(ctx context.Context, env *sandbox.Env, test CodeTest, timeout time.Duration) (string, string, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout+2*time.Second) // the instance's own deadline is timeout
	defer cancel()
	raw, err := env.Eval(cctx, "run", test.Input, test.TestType, timeout.Seconds(), r.OutputCap)
	if err != nil {
		if ctx.Err() != nil {
			return "", "", ctx.Err()
		}
		var se *sandbox.Error
		if errors.As(err, &se) {
			return "", "sandbox: " + firstLine(se.Error()), nil
		}
		return "", "", err
	}
	var rep testReply
	if err := strictObject(raw, &rep, "status", "code", "size", "chunk"); err != nil {
		return "", "", fmt.Errorf("bench: code runner: bad reply %.200s", raw)
	}
	switch rep.Status {
	case "timeout":
		return "", "timeout", nil
	case "output":
		return "", fmt.Sprintf("output over %d bytes", r.OutputCap), nil
	case "signal":
		return "", fmt.Sprintf("killed by signal %d", rep.Code), nil
	case "exit":
		if rep.Code != 0 {
			return "", fmt.Sprintf("runtime error (exit %d)", rep.Code), nil
		}
	default:
		return "", "", fmt.Errorf("bench: code runner: bad reply %.200s", raw)
	}
	if rep.Size < 0 || rep.Size > r.OutputCap {
		return "", "", fmt.Errorf("bench: code runner: an output of %d bytes", rep.Size)
	}
	out := make([]byte, 0, rep.Size)
	for chunk := rep.Chunk; ; {
		b, err := base64.StdEncoding.DecodeString(chunk)
		if err != nil || len(b) == 0 && len(out) < rep.Size {
			return "", "", fmt.Errorf("bench: code runner: bad output chunk")
		}
		out = append(out, b...)
		if len(out) >= rep.Size {
			break
		}
		raw, err := env.Eval(cctx, "chunk", len(out))
		if err != nil {
			return "", "", r.sandboxFailure(ctx, err)
		}
		if err := json.Unmarshal(raw, &chunk); err != nil {
			return "", "", fmt.Errorf("bench: code runner: bad output chunk")
		}
	}
	if len(out) != rep.Size {
		return "", "", fmt.Errorf("bench: code runner: %d bytes of output, %d announced", len(out), rep.Size)
	}
	return strings.ToValidUTF8(string(out), "\uFFFD"), "", nil
}

// Close is a no-op kept for symmetry with SympyJudge: each answer's program is released when its tests end.
func (r *CodeRunner) Close() {}

func (r *CodeRunner) sandboxFailure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return fmt.Errorf("bench: code runner: %w", err)
}

// sameOutput compares a test's output as LiveCodeBench does: stdin tests by their whitespace-separated
// tokens (which also equates outputs that differ in trailing spaces and blank lines); functional tests
// by the JSON values printed (a number as a number: 2 equals 2.0), or as trimmed text when either side
// is not JSON.
func sameOutput(testType, got, want string) bool {
	if testType != "functional" {
		return slices.Equal(pyFields(got), pyFields(want))
	}
	g, okG := decodeJSON(got)
	w, okW := decodeJSON(want)
	if okG && okW {
		return jsonEqual(g, w)
	}
	return strings.TrimFunc(got, pySpace) == strings.TrimFunc(want, pySpace)
}

// pySpace is Python's str.isspace: Unicode white space and the separators \x1c-\x1f.
func pySpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

func pyFields(s string) []string { return strings.FieldsFunc(s, pySpace) }

func decodeJSON(s string) (any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return v, true
}

// jsonEqual is Python's == on decoded JSON: integers exactly, a number with a fraction or exponent as a
// float, lists in order, objects by key.
func jsonEqual(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		ia, okA := new(big.Int).SetString(string(a), 10)
		ib, okB := new(big.Int).SetString(string(b), 10)
		if okA && okB {
			return ia.Cmp(ib) == 0
		}
		fa, errA := strconv.ParseFloat(string(a), 64)
		fb, errB := strconv.ParseFloat(string(b), 64)
		return errA == nil && errB == nil && fa == fb
	case []any:
		b, ok := b.([]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for i := range a {
			if !jsonEqual(a[i], b[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		b, ok := b.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, ok := b[k]
			if !ok || !jsonEqual(v, w) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
