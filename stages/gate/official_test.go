package gate

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// gate.checks = official runs the authors' gate (load, instantiate, reset then step("1"), step("2"),
// step("test")) with the static check still on: the sample envs pass it; a program that raises on one of
// the three actions fails it; and programs that only the strict checks catch (trivial, an empty reset
// observation) pass it, which is the difference between the two sets.
func TestOfficialChecks(t *testing.T) {
	if got, want := CheckNamesFor(schemas.SettingGames, config.GateOfficial), []string{CheckStatic, CheckLoad, CheckInstantiate, CheckSteps}; !reflect.DeepEqual(got, want) {
		t.Fatalf("official games checks %v, want %v", got, want)
	}
	if got := CheckNamesFor(schemas.SettingTools, config.GateOfficial); len(got) != 7 || got[6] != CheckToolsScreen {
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
	v := Check(context.Background(), pool, raises, CheckOptions{Hint: "think", Checks: config.GateOfficial})
	if f := v.Failure(); v.Accepted || f == nil || f.Check != CheckSteps || !strings.Contains(f.Error, `step("test")`) || !strings.Contains(f.Error, "ValueError") {
		t.Fatalf("a program raising on step(\"test\"): %+v", v.Failure())
	}
	trivial := strings.Replace(base, "ok = action.strip() == str(self.target)", "ok = True", 1)
	for name, code := range map[string]string{"trivial": trivial, "empty observation": strings.Replace(base, `return "guess 1..9"`, `return ""`, 1)} {
		if v := Check(context.Background(), pool, code, CheckOptions{Hint: "think", Checks: config.GateOfficial}); !v.Accepted {
			t.Errorf("%s: the official gate rejected it: %s", name, v.FailureText())
		}
		if v := Check(context.Background(), pool, code, CheckOptions{Hint: "think"}); v.Accepted {
			t.Errorf("%s: the strict gate accepted it", name)
		}
	}
}
