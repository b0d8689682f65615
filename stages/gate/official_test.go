package gate

import (
	"context"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// gate.checks = official runs the authors' gate (load, instantiate, reset then step("1"), step("2"),
// step("test")) with the static check still on: the sample envs pass it; a program that raises on one of
// the three actions fails it under the legacy contract and passes under the gymnasium one, where the
// authors' wrapper absorbs the raise; and programs that only the strict checks catch (trivial, an empty reset
// observation) pass it, which is the difference between the two sets.
func TestOfficialChecks(t *testing.T) {
	if got, want := CheckNamesFor(schemas.SettingGames, config.GateOfficial), []string{CheckStatic, CheckLoad, CheckInstantiate, CheckValidate, CheckSteps}; !reflect.DeepEqual(got, want) {
		t.Fatalf("official games checks %v, want %v", got, want)
	}
	if got := CheckNamesFor(schemas.SettingTools, config.GateOfficial); len(got) != 8 || got[7] != CheckToolsScreen {
		t.Fatalf("official tools checks %v", got)
	}
	pool := newPool(t, sandbox.IsolationBwrap)
	for _, s := range readSamples(t, repoPath("testdata", "envs")) {
		v := Check(context.Background(), pool, s.Code, CheckOptions{Setting: s.Setting, Hint: s.Hint, Screen: &allReachable{}, Checks: config.GateOfficial})
		if !v.Accepted {
			t.Errorf("%s: rejected by the official gate: %s", s.Name, v.FailureText())
		}
		if want := CheckNamesFor(s.Setting, config.GateOfficial); len(v.Results) != len(want) {
			t.Errorf("%s: %d results, want %d", s.Name, len(v.Results), len(want))
		}
	}
	base := `import random
class G:
    def reset(self, seed):
        self.rng = random.Random(seed)
        self.target = self.rng.randint(1, 9)
        return "guess 1..9"
    def step(self, action):
        ok = action.strip() == str(self.target)
        return ("yes" if ok else "no"), (1.0 if ok else 0.0), ok, {"success": ok}
`
	raises := strings.Replace(base, "ok = action.strip()", "if action == 'test':\n            raise ValueError('no words')\n        ok = action.strip()", 1)
	v := Check(context.Background(), pool, raises, CheckOptions{Hint: "think", Checks: config.GateOfficial, Contract: schemas.ContractLegacy})
	if f := v.Failure(); v.Accepted || f == nil || f.Check != CheckSteps || !strings.Contains(f.Error, `step("test")`) || !strings.Contains(f.Error, "ValueError") {
		t.Fatalf("a program raising on step(\"test\") under the legacy contract: %+v", v.Failure())
	}
	// under the gymnasium contract the authors' wrapper turns that raise into reward -1 and the episode's end
	if v := Check(context.Background(), pool, raises, CheckOptions{Hint: "think", Checks: config.GateOfficial}); !v.Accepted {
		t.Fatalf("a program raising on step(\"test\") under the gymnasium contract: refused: %s", v.FailureText())
	}
	trivial := strings.Replace(base, "ok = action.strip() == str(self.target)", "ok = True", 1)
	empty := strings.Replace(base, `return "guess 1..9"`, `return ""`, 1)
	for name, code := range map[string]string{"trivial": trivial, "empty observation": empty} {
		if v := Check(context.Background(), pool, code, CheckOptions{Hint: "think", Checks: config.GateOfficial, Contract: schemas.ContractLegacy}); !v.Accepted {
			t.Errorf("%s: the official gate of the legacy contract rejected it: %s", name, v.FailureText())
		}
		if v := Check(context.Background(), pool, code, CheckOptions{Hint: "think"}); v.Accepted {
			t.Errorf("%s: the strict gate accepted it", name)
		}
	}
	if v := Check(context.Background(), pool, trivial, CheckOptions{Hint: "think", Checks: config.GateOfficial}); !v.Accepted || v.Contract != schemas.ContractLegacy {
		t.Errorf("trivial: the official gate rejected it (%s) or saw contract %q", v.FailureText(), v.Contract)
	}
	if v := Check(context.Background(), pool, empty, CheckOptions{Hint: "think", Checks: config.GateOfficial}); v.Failure() == nil || v.Failure().Check != CheckValidate {
		t.Errorf("an empty first observation: the authors' validation must refuse it, got %+v", v.Failure())
	}
}

// The official gate under the gymnasium contract runs the authors' validation: the programs in their
// contract (testdata/envs-gym: one that terminates, one that truncates itself, one that relies on the
// injected names, one with a helper class beside the Env class, one whose reset returns a bare string)
// pass it and the strict gate, and the gate says they are Gymnasium-shaped; what the authors' validator
// refuses (a reward outside [-10, 10], a flag that is not a bool, a raise on \boxed{test}, a reset that
// fails with seed 123) fails validate with the reason; and the legacy contract's table has no validate.
func TestOfficialValidate(t *testing.T) {
	pool := newPool(t, sandbox.IsolationBwrap)
	ctx := context.Background()
	samples := readSamples(t, repoPath("testdata", "envs-gym"))
	if len(samples) != 5 {
		t.Fatalf("%d programs in testdata/envs-gym, want 5", len(samples))
	}
	for _, s := range samples {
		for _, checks := range []config.GateChecks{config.GateOfficial, config.GateStrict} {
			v := Check(ctx, pool, s.Code, CheckOptions{Setting: s.Setting, Hint: s.Hint, Checks: checks})
			if !v.Accepted || v.Contract != schemas.ContractGymnasium {
				t.Errorf("%s under %s: accepted=%v contract=%q %s", s.Name, checks, v.Accepted, v.Contract, v.FailureText())
			}
		}
	}
	base := `import random
class GuessEnv:
    def __init__(self, max_turns=5):
        self.max_turns = max_turns
    def reset(self, seed=None):
        self.target = random.Random(seed).randint(1, 9)
        return "guess 1..9", {}
    def step(self, action):
        ok = action.strip() == str(self.target)
        return ("yes" if ok else "no"), (1.0 if ok else 0.0), ok, False, {"success": ok}
`
	for name, c := range map[string]struct{ code, want string }{
		"reward 11":     {strings.Replace(base, "(1.0 if ok else 0.0)", "11.0", 1), "reward 11 outside [-10, 10]"},
		"int flag":      {strings.Replace(base, "ok, False, {", "int(ok), False, {", 1), "terminated is not a bool"},
		"raises on box": {strings.Replace(base, "ok = action", "if 'test' in action:\n            raise KeyError('boxed')\n        ok = action", 1), `step("\\boxed{test}")`},
		"seed 123":      {strings.Replace(base, "self.target = random", "if seed == 123:\n            raise ValueError('no replay')\n        self.target = random", 1), "reset(seed=123)"},
	} {
		v := Check(ctx, pool, c.code, CheckOptions{Hint: "think", Checks: config.GateOfficial})
		if f := v.Failure(); f == nil || f.Check != CheckValidate || !strings.Contains(f.Error, c.want) {
			t.Errorf("%s: %+v, want validate to fail with %q", name, f, c.want)
		}
	}
	if got := CheckNamesOf(schemas.SettingGames, config.GateOfficial, schemas.ContractLegacy); slices.Contains(got, CheckValidate) {
		t.Errorf("the legacy contract's official table %v has validate", got)
	}
}

// importLine matches a top-level import of a module the harness injects (a plain `import m` line).
var importLine = regexp.MustCompile(`(?m)^import (math|random|re|json|itertools|collections|functools|string|copy|heapq|statistics)\n`)

// A program that only misses imports of the names the authors' loader injects is accepted, as the
// authors accept it, and refused without the injections: every sample program (testdata/envs and
// testdata/envs-gym) with those import lines removed passes the official gate with
// sandbox.DefaultInjections and fails load or a later check with a NameError without them.
func TestInjectionsAcceptWhatTheAuthorsAccept(t *testing.T) {
	ctx := context.Background()
	with := newPool(t, sandbox.IsolationBwrap)
	without, err := sandbox.NewPool(ctx, sandbox.Options{Python: testPython(), Isolation: sandbox.IsolationBwrap, Workers: 2, Inject: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { without.Close() })
	stripped := 0
	for _, dir := range []string{"envs", "envs-gym"} {
		for _, s := range readSamples(t, repoPath("testdata", dir)) {
			code := importLine.ReplaceAllString(s.Code, "")
			if code == s.Code {
				continue
			}
			stripped++
			opts := CheckOptions{Setting: s.Setting, Hint: s.Hint, Screen: &allReachable{}, Checks: config.GateOfficial}
			if v := Check(ctx, with, code, opts); !v.Accepted {
				t.Errorf("%s without its imports, with the injections: rejected: %s", s.Name, v.FailureText())
			}
			if v := Check(ctx, without, code, opts); v.Accepted || !strings.Contains(v.FailureText(), "NameError") {
				t.Errorf("%s without its imports, without the injections: accepted=%v %s", s.Name, v.Accepted, v.FailureText())
			}
		}
	}
	if stripped < 10 {
		t.Fatalf("only %d sample programs import an injected module", stripped)
	}
	t.Logf("%d sample programs without their imports: accepted with the injections, refused without", stripped)
}
