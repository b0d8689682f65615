package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

// mustEnv makes a fresh instance of prog, closed when the test ends.
func mustEnv(t *testing.T, prog *Program) *Env {
	t.Helper()
	env, err := prog.NewEnv(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	return env
}

// waitOutput returns the program's output once it holds every one of want, or after settle.
func waitOutput(t *testing.T, prog *Program, want ...string) string {
	t.Helper()
	var out string
	for deadline := time.Now().Add(settle); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		var err error
		if out, err = prog.Output(context.Background()); err != nil {
			t.Fatal(err)
		}
		all := true
		for _, w := range want {
			all = all && strings.Contains(out, w)
		}
		if all {
			break
		}
	}
	return out
}

// gymTerminates is a program in the authors' contract: a helper class beside the Env class, reset
// returning (obs, info), the 5-tuple step, max_turns passed to the constructor, solution() and close().
const gymTerminates = `import random
from typing import Tuple, Dict

class Board:
    def reset(self, seed=None):
        return "not the env"
    def step(self, action):
        return "", 0.0, True, False, {}

class CountdownEnv:
    def __init__(self, max_turns=12, **kwargs):
        self.max_turns = max_turns
        self.board = Board()
    def reset(self, seed=None) -> Tuple[str, Dict]:
        self.rng = random.Random(seed)
        self.target = self.rng.randint(1, 5)
        self.turn = 0
        return "max_turns=%d: guess 1..5" % self.max_turns, {"target_hidden": True}
    def step(self, action: str) -> Tuple[str, float, bool, bool, Dict]:
        self.turn += 1
        ok = action.strip() == str(self.target)
        return ("yes" if ok else "no"), (1.0 if ok else 0.0), ok, (not ok and self.turn >= self.max_turns), {}
    def solution(self):
        return [str(self.target)]
    def close(self):
        print("closed after", self.turn, "turns")
`

// gymInjected uses the authors' injected names (math, deque, defaultdict, np) without importing them,
// with a keyword-only seed (Gymnasium's own signature) and a bare-string reset.
const gymInjected = `class TallyEnv:
    def reset(self, *, seed=None, options=None):
        self.seen = deque(maxlen=3)
        self.count = defaultdict(int)
        return "sqrt of 16 is %d" % int(math.sqrt(16))
    def step(self, action):
        self.seen.append(action)
        self.count[action] += 1
        return "seen %d" % len(self.seen), float(np.float64(0.5)) if len(self.seen) == 3 else 0.0, len(self.seen) == 3, False, {"n": self.count[action]}
`

// TestGymnasiumContract: the harness plays programs in the authors' contract (class discovery by the Env
// suffix, Cls(max_turns=N), reset's (obs, info) and a bare obs, reset(seed=...) with a keyword-only
// seed, the 5-tuple with terminated and truncated apart, the injected names, solution() and close()),
// and still plays the old 4-tuple shape, which it reports as such; and one worker serves all of them in
// turn, with episodes of one program side by side.
func TestGymnasiumContract(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers, o.MaxTurns = 1, 3 })
	prog, err := p.Load(ctx, gymTerminates)
	if err != nil {
		t.Fatal(err)
	}
	if prog.Class != "CountdownEnv" {
		t.Fatalf("class %q, want CountdownEnv (the Env suffix picks it beside Board)", prog.Class)
	}
	solved, cut := mustEnv(t, prog), mustEnv(t, prog)
	obs, err := solved.Reset(ctx, 7)
	if err != nil || obs != "max_turns=3: guess 1..5" {
		t.Fatalf("reset: %q %v (max_turns must reach the constructor)", obs, err)
	}
	if _, err := cut.Reset(ctx, 7); err != nil {
		t.Fatal(err)
	}
	sol, err := solved.Solution(ctx)
	if err != nil || !strings.HasPrefix(sol, "['") {
		t.Fatalf("solution: %q %v", sol, err)
	}
	answer := strings.Trim(sol, "[]'")
	res, err := solved.Step(ctx, answer)
	if err != nil || !res.Done || !res.Terminated || res.Truncated || !res.Success() || res.Shape.Arity != 5 || len(res.Shape.Deviations) != 0 {
		t.Fatalf("solving step: %+v %v", res, err)
	}
	wrong := "0"
	for turn := 1; turn <= 3; turn++ {
		res, err = cut.Step(ctx, wrong)
		if err != nil {
			t.Fatal(err)
		}
		if (turn < 3) == res.Done {
			t.Fatalf("turn %d: done=%v", turn, res.Done)
		}
	}
	if !res.Truncated || res.Terminated || res.Success() {
		t.Fatalf("the env's own time limit: %+v (truncated, not terminated, not a success)", res)
	}
	solved.Close()
	cut.Close()
	if out := waitOutput(t, prog, "closed after 1 turns", "closed after 3 turns"); !strings.Contains(out, "closed after 1 turns") || !strings.Contains(out, "closed after 3 turns") {
		t.Errorf("close() not called on each instance: output %q", out)
	}
	prog.Close()

	prog, err = p.Load(ctx, gymInjected)
	if err != nil {
		t.Fatalf("a program that relies on the injected names: %v", err)
	}
	env := mustEnv(t, prog)
	if obs, err := env.Reset(ctx, 1); err != nil || obs != "sqrt of 16 is 4" {
		t.Fatalf("bare-string reset with a keyword-only seed: %q %v", obs, err)
	}
	for i := 0; i < 3; i++ {
		res, err = env.Step(ctx, "a")
	}
	if err != nil || !res.Terminated || res.Reward != 0.5 || string(res.Info) != `{"n":3}` {
		t.Fatalf("injected deque/defaultdict/np: %+v %v", res, err)
	}
	prog.Close()

	legacy := `class Old:
    def reset(self, s):
        return "old " + str(s)
    def step(self, action):
        return "bye", 1, 1, None
`
	prog, err = p.Load(ctx, legacy)
	if err != nil {
		t.Fatal(err)
	}
	env = mustEnv(t, prog)
	if obs, err := env.Reset(ctx, 4); err != nil || obs != "old 4" {
		t.Fatalf("an old program's positional reset: %q %v", obs, err)
	}
	res, err = env.Step(ctx, "x")
	if err != nil || !res.Done || !res.Terminated || res.Truncated || !res.Shape.Legacy() || !res.Success() {
		t.Fatalf("an old 4-tuple step: %+v %v", res, err)
	}
	if got := strings.Join(res.Shape.Deviations, "; "); got != "info is None, not a dict" {
		t.Errorf("deviations %q", got)
	}
	prog.Close()
}

// TestGymnasiumContractErrors: the shapes the contract refuses, each with an error that says what the
// contract wants.
func TestGymnasiumContractErrors(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	two := "class A:\n    def reset(self, seed=None): return 'a'\n    def step(self, a): return 'a', 0.0, True, False, {}\n" +
		"class B:\n    def reset(self, seed=None): return 'b'\n    def step(self, a): return 'b', 0.0, True, False, {}\n"
	if _, err := p.Load(ctx, two); err == nil || !strings.Contains(err.Error(), "none named ...Env") {
		t.Errorf("two classes, neither ...Env: %v", err)
	}
	problems, err := p.StaticCheck(ctx, two, "games")
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], "none named ...Env") {
		t.Errorf("static check of two classes, neither ...Env: %q %v", problems, err)
	}
	derived := "class GridEnv:\n    def reset(self, seed=None): return 'base'\n    def step(self, a): return 'a', 0.0, True, False, {}\n" +
		"class MazeEnv(GridEnv):\n    def reset(self, seed=None): return 'maze'\n"
	if problems, err := p.StaticCheck(ctx, derived, "games"); err != nil || len(problems) != 0 {
		t.Errorf("static check of an Env derived from an Env: %q %v", problems, err)
	}
	prog, err := p.Load(ctx, derived)
	if err != nil || prog.Class != "MazeEnv" {
		t.Fatalf("derived Env: %v %v (the class another derives from is not the env)", prog, err)
	}
	prog.Close()
	for name, c := range map[string]struct{ step, want string }{
		"3-tuple":        {"return 'x', 0.0, True", "got a 3-tuple"},
		"list":           {"return ['x', 0.0, True, False, {}]", "got list"},
		"string flag":    {"return 'x', 0.0, 'yes', False, {}", "terminated must be bool, got str"},
		"reset 3-tuple":  {"", "reset must return (observation, info) or an observation, got a 3-tuple"},
		"numpy-ish bool": {"return 'x', 0.0, 1, False, {}", ""},
	} {
		code := "class XEnv:\n    def reset(self, seed=None): return 'x', {}\n    def step(self, a):\n        " + c.step + "\n"
		if c.step == "" {
			code = "class XEnv:\n    def reset(self, seed=None): return 'x', {}, 1\n    def step(self, a): return 'x', 0.0, True, False, {}\n"
		}
		prog, err := p.Load(ctx, code)
		if err != nil {
			t.Fatal(name, err)
		}
		env := mustEnv(t, prog)
		_, err = env.Reset(ctx, 0)
		if err == nil {
			var res StepResult
			res, err = env.Step(ctx, "a")
			if c.want == "" && (err != nil || !res.Terminated || len(res.Shape.Deviations) != 1) {
				t.Errorf("%s: an int flag is read, and reported: %+v %v", name, res, err)
			}
		}
		if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%s: %v, want %q", name, err, c.want)
		}
		prog.Close()
	}
}

// TestInjectedModulesKeepTheStaticRules: an injected module is checked like an imported one (its
// private attributes and the modules it reaches), and every injected module is on the allowlist.
func TestInjectedModulesKeepTheStaticRules(t *testing.T) {
	for name, target := range DefaultInjections {
		module, _, _ := strings.Cut(target, ":")
		found := false
		for _, m := range DefaultAllowedImports {
			found = found || m == module
		}
		if !found {
			t.Errorf("injected name %s comes from %s, which is not in DefaultAllowedImports", name, module)
		}
	}
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	for _, code := range []string{
		"class XEnv:\n    def reset(self, seed=None): return str(random._os)\n    def step(self, a): return 'x', 0.0, True, False, {}\n",
		"class XEnv:\n    def reset(self, seed=None): return str(json.decoder.sys)\n    def step(self, a): return 'x', 0.0, True, False, {}\n",
		"class XEnv:\n    def reset(self, seed=None): return str(collections.abc.sys)\n    def step(self, a): return 'x', 0.0, True, False, {}\n",
	} {
		problems, err := p.StaticCheck(ctx, code, "games")
		if err != nil || len(problems) == 0 {
			t.Errorf("static check passed %q: %v", code, err)
		}
	}
}

// duplicateKey finds a key repeated within one object at any depth, and only there.
func TestDuplicateKey(t *testing.T) {
	for text, want := range map[string]string{
		`{"a":1,"b":2}`:                                       "",
		`{"a":1,"a":2}`:                                       "a",
		`{"a":{"b":1,"b":2}}`:                                 "b",
		`{"a":[{"k":1},{"k":2}],"b":{"k":3}}`:                 "",
		`{"a":[1,{"x":1,"x":2}]}`:                             "x",
		`{"a":"a","b":["a","a"]}`:                             "",
		`[{"s":1},{"s":1,"t":{"s":2}}]`:                       "",
		`{"info":{"success":true,"success":false},"obs":"x"}`: "success",
	} {
		got, err := duplicateKey([]byte(text))
		if err != nil || got != want {
			t.Errorf("duplicateKey(%s) = %q, %v; want %q", text, got, err, want)
		}
	}
	if _, err := duplicateKey([]byte(`{"a":`)); err == nil {
		t.Error("a cut-off text gives no error")
	}
}

// A program that leaves a thread, a child process or a signal handler behind when it loads is refused
// before any instance is forked from its template (each would reach every episode forked from it), and
// the same worker then serves a good program.
func TestTemplateRefusesWhatOutlivesTheLoad(t *testing.T) {
	ctx := context.Background()
	p := newTestPool(t, isoUnderTest(), func(o *Options) { o.Workers = 1 })
	env := "\nclass XEnv:\n    def reset(self, seed=None): return 'x', {}\n    def step(self, a): return 'x', 0.0, True, False, {}\n"
	for name, c := range map[string]struct{ code, want string }{
		"thread": {"import threading, time\nthreading.Thread(target=time.sleep, args=(30,), daemon=True).start()" + env, "thread(s) running"},
		"child":  {"import os, time\nif os.fork() == 0:\n    time.sleep(30)\n    os._exit(0)" + env, "child process"},
		"signal": {"import signal\nsignal.signal(signal.SIGUSR1, lambda *a: None)" + env, "signal handlers when it loaded (SIGUSR1)"},
	} {
		_, err := p.Load(ctx, c.code)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: load %v, want %q", name, err, c.want)
		}
		prog, err := p.Load(ctx, gymInjected)
		if err != nil {
			t.Fatalf("a good program after %s: %v", name, err)
		}
		e := mustEnv(t, prog)
		if obs, err := e.Reset(ctx, 0); err != nil || obs != "sqrt of 16 is 4" {
			t.Errorf("a good program after %s: %q %v", name, obs, err)
		}
		prog.Close()
	}
}
