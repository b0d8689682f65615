package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/sandbox"
)

func TestExtractBoxed(t *testing.T) {
	cases := []struct{ text, want string }{
		{`so \boxed{12} then \boxed{\frac{1}{2}}`, `\frac{1}{2}`},
		{`answer: \boxed{x^{2}+1}.`, `x^{2}+1`},
		{`\fbox{7}`, `7`},
		{`\boxed 5.`, `5`},
		{`no box here`, ``},
	}
	for _, c := range cases {
		got, _ := ExtractBoxed(c.text)
		if got != c.want {
			t.Errorf("ExtractBoxed(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

func TestCompareMath(t *testing.T) {
	cases := []struct {
		answer, ref   string
		correct, sure bool
	}{
		{"025", "25", true, true},
		{`\frac{1}{2}`, "0.5", true, true},
		{`\dfrac12`, "1/2", true, true},
		{"-\\frac{3}{4}", "-0.75", true, true},
		{"1,000", "1000", true, true},
		{`x = 4`, "4", true, true},
		{`45^\circ`, "45", true, true},
		{`10\%`, "10", true, true},
		{`12\text{ cm}`, "12", true, true},
		{"3.", "3", true, true},
		{"33", "333", false, true},    // looks right, is not
		{"1/3", "0.333", false, true}, // a rounding is not the answer
		{`2\sqrt{3}`, `\sqrt{12}`, false, false},
		{`\pi/2`, `\frac{\pi}{2}`, false, false},
	}
	for _, c := range cases {
		v := CompareMath(c.answer, c.ref)
		if v.Correct != c.correct || v.Sure != c.sure {
			t.Errorf("CompareMath(%q, %q) = %+v, want correct=%v sure=%v", c.answer, c.ref, v, c.correct, c.sure)
		}
	}
}

func TestScoreChoice(t *testing.T) {
	options := []string{"red", "green", "blue", "black"}
	shown := ShuffleOptions(options, ShuffleSeed(1, "b", "q1", 0))
	if again := ShuffleOptions(options, ShuffleSeed(1, "b", "q1", 0)); strings.Join(again, ",") != strings.Join(shown, ",") {
		t.Fatal("the same seed must give the same order")
	}
	differs := false
	for s := 1; s < 8; s++ {
		if strings.Join(ShuffleOptions(options, ShuffleSeed(1, "b", "q1", s)), ",") != strings.Join(shown, ",") {
			differs = true
		}
	}
	if !differs {
		t.Fatal("eight samples all had the same order")
	}
	letter := string(rune('A' + indexOf(shown, "blue")))
	wrong := string(rune('A' + (indexOf(shown, "blue")+1)%4))
	cases := []struct {
		response string
		score    float64
	}{
		{"Thinking... The answer is (" + letter + ")", 1},
		{"Answer: " + letter, 1},
		{`\boxed{` + letter + `}`, 1},
		{"I first thought (" + letter + ") but the answer is " + wrong + ".", 0},
		{"no idea", 0},
	}
	for _, c := range cases {
		if got, _, _ := ScoreChoice(c.response, shown, "blue"); got != c.score {
			t.Errorf("ScoreChoice(%q) = %v, want %v (shown %v)", c.response, got, c.score, shown)
		}
	}
}

func TestScoreFunctionCalls(t *testing.T) {
	want := []ExpectedCall{
		{Name: "get_weather", Args: map[string][]any{"city": {"Paris", "paris, france"}, "unit": {"celsius", ""}}},
		{Name: "get_time", Args: map[string][]any{"zone": {"CET"}}},
	}
	call := func(name, args string) Call {
		var m map[string]any
		if err := json.Unmarshal([]byte(args), &m); err != nil {
			t.Fatal(err)
		}
		return Call{Name: name, Args: m}
	}
	cases := []struct {
		name    string
		got     []Call
		ordered bool
		score   float64
	}{
		{"in order", []Call{call("get_weather", `{"city":"Paris","unit":"celsius"}`), call("get_time", `{"zone":"CET"}`)}, false, 1},
		{"calls swapped, arguments reordered", []Call{call("get_time", `{"zone":"cet"}`), call("get_weather", `{"unit":"celsius","city":" paris "}`)}, false, 1},
		{"swapped when order matters", []Call{call("get_time", `{"zone":"CET"}`), call("get_weather", `{"city":"Paris"}`)}, true, 0},
		{"optional argument left out", []Call{call("get_weather", `{"city":"Paris"}`), call("get_time", `{"zone":"CET"}`)}, false, 1},
		{"required argument missing", []Call{call("get_weather", `{"unit":"celsius"}`), call("get_time", `{"zone":"CET"}`)}, false, 0},
		{"extra argument", []Call{call("get_weather", `{"city":"Paris","days":3}`), call("get_time", `{"zone":"CET"}`)}, false, 0},
		{"wrong value", []Call{call("get_weather", `{"city":"Lyon"}`), call("get_time", `{"zone":"CET"}`)}, false, 0},
		{"one call missing", []Call{call("get_weather", `{"city":"Paris"}`)}, false, 0},
	}
	for _, c := range cases {
		if got, why := ScoreFunctionCalls(c.got, want, c.ordered); got != c.score {
			t.Errorf("%s: score %v (%s), want %v", c.name, got, why, c.score)
		}
	}
	numbers := []ExpectedCall{{Name: "area", Args: map[string][]any{"r": {json.Number("2")}}}}
	if got, why := ScoreFunctionCalls([]Call{call("area", `{"r": 2.0}`)}, numbers, false); got != 1 {
		t.Errorf("2.0 against 2: %s", why)
	}
	if calls := ParseTextCalls("```json\n[{\"name\":\"area\",\"arguments\":{\"r\":2}}]\n```"); len(calls) != 1 || calls[0].Name != "area" {
		t.Errorf("ParseTextCalls = %+v", calls)
	}
}

// testPool starts a sandbox pool (bwrap unless $SPADE_TEST_ISOLATION says otherwise).
func testPool(t testing.TB) *sandbox.Pool {
	t.Helper()
	py := os.Getenv(sandbox.PythonEnv)
	if py == "" {
		py = "/usr/bin/python3"
	}
	iso := sandbox.IsolationAuto
	if v := os.Getenv("SPADE_TEST_ISOLATION"); v != "" {
		iso = sandbox.Isolation(v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// a reset (a scorer's whole run of an answer) gets a deadline a loaded machine does not reach
	p, err := sandbox.NewPool(ctx, sandbox.Options{Python: py, Isolation: iso, Workers: 4, ResetTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func TestSympyJudge(t *testing.T) {
	judge := NewSympyJudge(testPool(t))
	defer judge.Close()
	ctx := context.Background()
	cases := []struct {
		answer, ref string
		score       float64
	}{
		{`2\sqrt{3}`, `\sqrt{12}`, 1},
		{`\pi/2`, `\frac{\pi}{2}`, 1},
		{`(x+1)^2`, `x^2+2x+1`, 1},
		{`\frac{\sqrt{2}}{2}`, `\frac{1}{\sqrt{2}}`, 1},
		{`(1, \frac{1}{2})`, `(1, 0.5)`, 1},
		{`2\sqrt{2}`, `\sqrt{6}`, 0}, // close in value, not equal
		{`x^2-1`, `(x-1)^2`, 0},
		{`\frac{1}{`, `2`, 0}, // unparsable
	}
	for _, c := range cases {
		score, _, detail, err := ScoreMath(ctx, `so \boxed{`+c.answer+`}`, c.ref, judge)
		if err != nil {
			t.Fatal(err)
		}
		if score != c.score {
			t.Errorf("%q vs %q: score %v (%s), want %v", c.answer, c.ref, score, detail, c.score)
		}
	}
}

func TestScoreCodeInSandbox(t *testing.T) {
	runner := NewCodeRunner(testPool(t))
	runner.TestTimeout = 3 * time.Second
	runner.OutputCap = 64 << 10
	defer runner.Close()
	ctx := context.Background()
	tests := CodeTests{
		Public:  []CodeTest{{Input: "2 3\n", Output: "5\n", TestType: "stdin"}},
		Private: []CodeTest{{Input: "-4 10\n", Output: "6\n", TestType: "stdin"}, {Input: "1000000000000 1\n", Output: "1000000000001", TestType: "stdin"}},
	}
	fence := func(code string) string { return "Here it is:\n```python\n" + code + "\n```\n" }
	hostFile := t.TempDir() + "/pwned"
	cases := []struct {
		name, code string
		score      float64
		why        string
	}{
		{"correct", "a, b = map(int, input().split())\nprint(a + b)", 1, "all 3 tests passed"},
		{"passes public, fails private", "a, b = map(int, input().split())\nprint(abs(a) + b if a < 0 else a + b)", 0, "private test 1 failed: wrong output"},
		{"loops", "while True:\n    pass", 0, "timeout"},
		{"prints too much", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)", 0, "output over"},
		{"attacks the host and its grader", "import os, signal\ntry:\n    open('" + hostFile + "', 'w').write('x')\nexcept OSError:\n    pass\nos.kill(os.getppid(), signal.SIGKILL)\nprint(5)", 0, ""},
		{"correct after an attack", "a, b = map(int, input().split())\nprint(a + b)", 1, "all 3 tests passed"},
		{"forks and escapes", "import os\nfor _ in range(200):\n    os.fork()\nprint(5)", 0, "public test 1 failed"},
		{"reads files", "print(open('/etc/shadow').read())", 0, "runtime error"},
		{"crashes", "raise SystemExit(3)", 0, "exit 1"},
	}
	for _, c := range cases {
		began := time.Now()
		score, _, detail, err := ScoreCode(ctx, runner, fence(c.code), tests, CodeMeta{})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if score != c.score || !strings.Contains(detail, c.why) {
			t.Errorf("%s: score %v (%s), want %v (%s)", c.name, score, detail, c.score, c.why)
		}
		// a failing program costs at most one test's deadline (a loop stops the run at its first test),
		// never one per test: the bound leaves a loaded machine a deadline's worth of room
		if el := time.Since(began); el > 2*runner.TestTimeout {
			t.Errorf("%s took %v, over two tests' deadlines (%v each)", c.name, el, runner.TestTimeout)
		}
	}
	if _, err := os.Stat(hostFile); err == nil {
		t.Errorf("a candidate wrote %s on the host", hostFile)
	}
	functional := CodeTests{Public: []CodeTest{{Input: "[1, 2, 3]\n2", Output: "[3, 4, 5]", TestType: "functional"}}}
	score, _, detail, err := ScoreCode(ctx, runner, fence("class Solution:\n    def shift(self, xs, k):\n        return [x + k for x in xs]"), functional, CodeMeta{FuncName: "shift"})
	if err != nil || score != 1 {
		t.Errorf("functional test: score %v (%s) %v", score, detail, err)
	}
}

// The order-insensitive matcher finds a perfect matching exactly when one exists (against every
// permutation, on random small instances), and an answer built to make a search by trying orders take n!
// steps (every call fits every expected call but the last, which fits none) is scored at once.
func TestScoreFunctionCallsMatching(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := 0; trial < 300; trial++ {
		n := 1 + rng.IntN(5)
		var want []ExpectedCall
		var got []Call
		for i := 0; i < n; i++ {
			// want i accepts a set of values of "v"; got j carries one value
			var accepted []any
			for v := 0; v < 4; v++ {
				if rng.IntN(3) == 0 {
					accepted = append(accepted, fmt.Sprint(v))
				}
			}
			if len(accepted) == 0 {
				accepted = []any{"none"}
			}
			want = append(want, ExpectedCall{Name: "f", Args: map[string][]any{"v": accepted}})
			got = append(got, Call{Name: "f", Args: map[string]any{"v": fmt.Sprint(rng.IntN(4))}})
		}
		brute := 0.0
		permute(n, func(p []int) {
			for i := range want {
				if matchCall(got[p[i]], want[i]) != "" {
					return
				}
			}
			brute = 1
		})
		if score, why := ScoreFunctionCalls(got, want, false); score != brute {
			t.Fatalf("trial %d: score %v (%s), a permutation search says %v: got %v want %v", trial, score, why, brute, got, want)
		}
	}
	const n = 14
	var want []ExpectedCall
	var got []Call
	for i := 0; i < n; i++ {
		want = append(want, ExpectedCall{Name: "f", Args: map[string][]any{"v": {"any", "x"}}})
		got = append(got, Call{Name: "f", Args: map[string]any{"v": "x"}})
	}
	want[n-1] = ExpectedCall{Name: "f", Args: map[string][]any{"v": {"only-this"}}}
	if score, why := ScoreFunctionCalls(got, want, false); score != 0 || !strings.Contains(why, "expected call 14") {
		t.Fatalf("the n! answer: %v %s", score, why)
	}
}

// permute calls f with every permutation of 0..n-1.
func permute(n int, f func([]int)) {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	var rec func(k int)
	rec = func(k int) {
		if k == n {
			f(p)
			return
		}
		for i := k; i < n; i++ {
			p[k], p[i] = p[i], p[k]
			rec(k + 1)
			p[k], p[i] = p[i], p[k]
		}
	}
	rec(0)
}
