package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/sandbox"
)

// The hostile benchmark answers of testdata/hostile/answers, each of which forges a score: shown to work
// against the scorers as they were before they were guarded (testdata/hostile/scorers: a judge that
// evaluates the answer's text with sympy's parse_expr and replies on the instance's socket, a runner that
// forks the candidate from a process holding every test and is reused across answers), and contained by
// SympyJudge and CodeRunner.

func hostileAnswer(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hostile", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// unguardedJudge is the judge before it was guarded: Go reads [equal, detail] from whatever the
// instance's socket says.
type unguardedJudge struct{ l loaded }

func (j *unguardedJudge) Equivalent(ctx context.Context, a, b string) (bool, string, error) {
	raw, err := j.l.eval(ctx, 10*time.Second, "equivalent", a, b)
	if err != nil {
		return false, "", err
	}
	var out []any
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 2 {
		return false, "", fmt.Errorf("bad reply %s", raw)
	}
	eq, _ := out[0].(bool)
	detail, _ := out[1].(string)
	return eq, detail, nil
}

// unguardedRun is the code runner before it was guarded: one loaded program for every answer, every
// test of an answer sent to one instance that forks the candidate per test and compares there.
func unguardedRun(ctx context.Context, l *loaded, program string, tests []CodeTest) (CodeResult, error) {
	// each test's time and the answer's budget leave room for a loaded machine (a daemon's reply comes
	// after its scan of /proc): the attacks are judged by their output, never by a deadline
	raw, err := l.eval(ctx, 3*time.Minute, "run", program, tests, "", 30.0, 120.0, 64<<10)
	if err != nil {
		return CodeResult{}, err
	}
	var res CodeResult
	err = json.Unmarshal(raw, &res)
	return res, err
}

// hostileMath are the math answers that forge a score, all wrong for the reference √7.
var hostileMath = []string{"answers/math_equal_anything.txt", "answers/math_forge_verdict.txt"}

const hostileMathReference = `\sqrt{7}`

// hostileCodeTests are the tests the code answers are run on: two integers, their sum.
var hostileCodeTests = CodeTests{
	Public:  []CodeTest{{Input: "2 3\n", Output: "5\n", TestType: "stdin"}},
	Private: []CodeTest{{Input: "-4 10\n", Output: "6\n", TestType: "stdin"}, {Input: "40 2\n", Output: "42\n", TestType: "stdin"}},
}

func fenced(code string) string { return "```python\n" + code + "\n```\n" }

func TestHostileAnswersReachTheirGoalsUnguarded(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	judge := &unguardedJudge{l: loaded{pool: pool, code: hostileAnswer(t, "scorers/unguarded_sympy_judge.py")}}
	defer judge.l.close()
	for _, name := range hostileMath {
		score, ans, detail, err := ScoreMath(ctx, hostileAnswer(t, name), hostileMathReference, judge)
		if err != nil || score != 1 {
			t.Errorf("%s against the unguarded judge: score %v (%s, %v; answer %.80q), want the forged 1", name, score, detail, err, ans)
		}
	}
	runner := &loaded{pool: pool, code: hostileAnswer(t, "scorers/unguarded_code_runner.py")}
	defer runner.close()
	// The daemon pair runs where nothing but the runner could stop the daemon: with no isolation layer.
	// Under bwrap and namespaces the layer's init kills a detached process within half a second, so
	// there the pair meets only when the second answer starts within that time, which a loaded machine
	// does not promise.
	unsafe, err := sandbox.NewPool(ctx, sandbox.Options{Python: pool.Python().Executable, Isolation: sandbox.IsolationNone,
		AllowUnsafe: true, Workers: 1, ResetTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unsafe.Close() })
	daemonRunner := &loaded{pool: unsafe, code: hostileAnswer(t, "scorers/unguarded_code_runner.py")}
	defer daemonRunner.close()
	all := append(append([]CodeTest(nil), hostileCodeTests.Public...), hostileCodeTests.Private...)
	for _, name := range []string{"answers/code_read_expected.py", "answers/code_daemon_serves.py", "answers/code_daemon_asks.py"} {
		runner := runner
		if strings.Contains(name, "daemon") {
			runner = daemonRunner
		}
		res, err := unguardedRun(ctx, runner, hostileAnswer(t, name), all)
		if err != nil || res.Failed != -1 {
			t.Errorf("%s against the unguarded runner: %+v %v, want every test passed", name, res, err)
		}
	}
}

func TestHostileAnswersContained(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	judge := NewSympyJudge(pool)
	defer judge.Close()
	for _, name := range hostileMath {
		score, _, detail, err := ScoreMath(ctx, hostileAnswer(t, name), hostileMathReference, judge)
		if err != nil || score != 0 || !strings.Contains(detail, "unparsable") {
			t.Errorf("%s: score %v (%s, %v), want 0, unparsable", name, score, detail, err)
		}
	}
	if score, _, detail, err := ScoreMath(ctx, `\boxed{\sqrt{28}/2}`, hostileMathReference, judge); err != nil || score != 1 {
		t.Errorf("an honest answer after the hostile ones: score %v (%s, %v)", score, detail, err)
	}
	runner := NewCodeRunner(pool)
	runner.TestTimeout = 20 * time.Second // no case here ends by its deadline: room for a loaded machine
	cases := []struct {
		name  string
		score float64
		why   string
	}{
		{"answers/code_read_expected.py", 0, "public test 1 failed: wrong output"},
		{"answers/code_daemon_serves.py", 1, "all 3 tests passed"},
		{"answers/code_daemon_asks.py", 0, "public test 1 failed: wrong output"},
	}
	for _, c := range cases {
		score, _, detail, err := ScoreCode(ctx, runner, fenced(hostileAnswer(t, c.name)), hostileCodeTests, CodeMeta{})
		if err != nil || score != c.score || !strings.Contains(detail, c.why) {
			t.Errorf("%s: score %v (%s, %v), want %v (%s)", c.name, score, detail, err, c.score, c.why)
		}
	}
	// Within one answer too: the daemon its first test leaves is killed before the second test runs.
	both := fmt.Sprintf("import io, sys\ndata = sys.stdin.read()\nsys.stdin = io.StringIO(data)\n"+
		"exec(compile(%q if data.startswith('2 3') else %q, 'solution', 'exec'), {'__name__': '__main__'})\n",
		hostileAnswer(t, "answers/code_daemon_serves.py"), hostileAnswer(t, "answers/code_daemon_asks.py"))
	if score, _, detail, err := ScoreCode(ctx, runner, fenced(both), hostileCodeTests, CodeMeta{}); err != nil || score != 0 || !strings.Contains(detail, "private test 1 failed: wrong output") {
		t.Errorf("a daemon left by the first test: score %v (%s, %v), want private test 1 failed", score, detail, err)
	}
	honest := "a, b = map(int, input().split())\nprint(a + b)"
	if score, _, detail, err := ScoreCode(ctx, runner, fenced(honest), hostileCodeTests, CodeMeta{}); err != nil || score != 1 {
		t.Errorf("an honest answer after the hostile ones: score %v (%s, %v)", score, detail, err)
	}
}

// A forged reply of the instance is no verdict: only the exact object with the call's nonce is.
func TestReadVerdictIsStrict(t *testing.T) {
	const nonce = "n1"
	cases := []struct {
		raw   string
		equal bool
		ok    bool
	}{
		{`{"nonce":"n1","equal":true,"detail":"equivalent"}`, true, true},
		{`{"nonce":"n1","equal":false,"detail":"not equivalent"}`, false, true},
		{`[true,"equivalent"]`, false, false},
		{`{"nonce":"n2","equal":true,"detail":"equivalent"}`, false, false},
		{`{"nonce":"n1","equal":false,"equal":true,"detail":"x"}`, false, false},
		{`{"nonce":"n1","equal":true,"detail":"x","extra":1}`, false, false},
		{`{"nonce":"n1","equal":"true","detail":"x"}`, false, false},
		{`{"nonce":"n1","equal":true}`, false, false},
	}
	for _, c := range cases {
		eq, detail, err := readVerdict(json.RawMessage(c.raw), nonce)
		if err != nil || eq != c.equal || c.ok == strings.HasPrefix(detail, "sympy judge:") {
			t.Errorf("%s: %v %q %v", c.raw, eq, detail, err)
		}
	}
}

// The function-call matcher stops at its deadline, whatever the answer makes it compare: here 300 calls
// whose arguments are long lists, each against 300 expected calls (90,000 comparisons of 5,000-element
// lists, seconds of work), stopped within a few milliseconds of a 20 ms deadline.
func TestScoreFunctionCallsStopsAtDeadline(t *testing.T) {
	const n, size = 300, 5000
	long := make([]any, size)
	for i := range long {
		long[i] = json.Number(fmt.Sprint(i))
	}
	var got []Call
	var want []ExpectedCall
	for i := 0; i < n; i++ {
		got = append(got, Call{Name: "f", Args: map[string]any{"v": long}})
		other := append(append([]any(nil), long[:size-1]...), json.Number("-1"))
		want = append(want, ExpectedCall{Name: "f", Args: map[string][]any{"v": {other}}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, _, err := ScoreFunctionCallsContext(ctx, got, want, false)
	if err != context.DeadlineExceeded {
		t.Fatalf("err %v after %v, want the deadline", err, time.Since(began))
	}
	if el := time.Since(began); el > 500*time.Millisecond {
		t.Errorf("stopped %v after a 20 ms deadline", el)
	}
	if score, why, err := ScoreFunctionCallsContext(context.Background(), got[:2], want[:2], false); err != nil || score != 0 || !strings.Contains(why, "not accepted") {
		t.Errorf("without a deadline: %v %s %v", score, why, err)
	}
}

// The judge's grammar on the answer forms it admits, and its bounds: each pair as the judge decides it.
func TestSympyJudgeGrammar(t *testing.T) {
	judge := NewSympyJudge(testPool(t))
	defer judge.Close()
	ctx := context.Background()
	cases := []struct {
		a, b string
		eq   bool
	}{
		{`\frac12`, `0.5`, true},
		{`\sqrt[3]{8}`, `2`, true},
		{`e^{i\pi}`, `-1`, true},
		{`\sin^2x+\cos^2x`, `1`, true},
		{`\log_{2}8`, `3`, true},
		{`5!`, `120`, true},
		{`2^{-1}`, `0.5`, true},
		{`x_1+x_2`, `x_2+x_1`, true},
		{`\alpha\beta`, `\beta\alpha`, true},
		{`|{-3}|`, `3`, true},
		{`\{1,2,3\}`, `\{3,2,1\}`, true},
		{`\{1,2\}`, `\{1,3\}`, false},
		{`\{1,2\}`, `(1,2)`, false},
		{`[0,1)`, `(0,1)`, false},
		{`(0,\infty)`, `(0,\infty)`, true},
		{`-\infty`, `\infty`, false},
		{`9^9^9`, `1`, false},        // refused: the power is too large to build
		{`(10^999)^999`, `1`, false}, // refused likewise
		{`x\le2`, `x\le2`, false},    // outside the grammar on both sides
	}
	for _, c := range cases {
		eq, detail, err := judge.Equivalent(ctx, c.a, c.b)
		if err != nil || eq != c.eq {
			t.Errorf("%s vs %s: %v (%s, %v), want %v", c.a, c.b, eq, detail, err, c.eq)
		}
	}
}

// What computes a verdict holds no descriptor but its pipe, and a candidate none but stdin, stdout and
// stderr: the judge with its comparison replaced by a listing of the child's descriptors, and a
// candidate that prints its own.
func TestScorersHoldNoOtherDescriptor(t *testing.T) {
	pool := testPool(t)
	if pool.Isolation() == sandbox.IsolationLandlock {
		t.Skip("/proc cannot be read on the landlock layer")
	}
	ctx := context.Background()
	listing := sympyJudgeSource + "\n\ndef verdict(a, b):\n    import os\n    return [False, str(len(os.listdir('/proc/self/fd')))]\n"
	judge := &SympyJudge{Timeout: 10 * time.Second, l: loaded{pool: pool, code: listing}}
	defer judge.Close()
	if _, detail, err := judge.Equivalent(ctx, "1", "2"); err != nil || detail != "2" { // the pipe, and the listing's own
		t.Errorf("the judge's child holds %s descriptors (%v), want 2: its pipe and the listing's own", detail, err)
	}
	runner := NewCodeRunner(pool)
	tests := CodeTests{Public: []CodeTest{{Input: "x\n", Output: "0 1 2 3", TestType: "stdin"}}}
	program := "import os\nprint(' '.join(sorted(os.listdir('/proc/self/fd'))))"
	if score, _, detail, err := ScoreCode(ctx, runner, fenced(program), tests, CodeMeta{}); err != nil || score != 1 {
		t.Errorf("the candidate holds more than stdin, stdout, stderr (and the listing's own): %s %v", detail, err)
	}
}

// A comparison that outlasts the judge's timeout is not equivalent, and the judge goes on.
func TestSympyJudgeTimeout(t *testing.T) {
	pool := testPool(t)
	ctx := context.Background()
	slow := sympyJudgeSource + "\n\ndef verdict(a, b):\n    import time\n    time.sleep(30)\n"
	judge := &SympyJudge{Timeout: 300 * time.Millisecond, l: loaded{pool: pool, code: slow}}
	defer judge.Close()
	for i := 0; i < 2; i++ {
		began := time.Now()
		eq, detail, err := judge.Equivalent(ctx, "1", "1")
		// (the comparison sleeps 30 s: 15 s, a loaded machine's load of sympy included, shows it was cut)
		if err != nil || eq || !strings.Contains(detail, "took longer") || time.Since(began) > 15*time.Second {
			t.Errorf("a slow comparison: %v %q %v after %v", eq, detail, err, time.Since(began))
		}
	}
}
