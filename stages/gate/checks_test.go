package gate

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// allReachable is the test's stand-in screen model: it answers yes for every instruction.
type allReachable struct{ calls int }

func (a *allReachable) Screen(ctx context.Context, code string, tools json.RawMessage, instructions []string) ([]bool, string, error) {
	a.calls++
	out := make([]bool, len(instructions))
	for i := range out {
		out[i] = true
	}
	return out, "", nil
}

func TestSampleEnvsPassEveryGate(t *testing.T) {
	pool := newPool(t, sandbox.IsolationBwrap)
	samples := readSamples(t, repoPath("testdata", "envs"))
	skills := map[string]int{}
	tools := 0
	for _, s := range samples {
		t.Run(s.Name, func(t *testing.T) {
			screen := &allReachable{}
			v := Check(context.Background(), pool, s.Code, CheckOptions{Setting: s.Setting, Hint: s.Hint, Screen: screen})
			want := GamesChecks
			if s.Setting == schemas.SettingTools {
				want = ToolsChecks
				if screen.calls != 1 {
					t.Errorf("screen called %d times, want 1", screen.calls)
				}
			}
			if len(v.Results) != len(want) {
				t.Fatalf("%d results, want %d", len(v.Results), len(want))
			}
			for i, r := range v.Results {
				// Run, not skipped: tools_conditions evaluates the program's success_conditions().
				if r.Check != want[i] || !r.Passed || r.Skipped {
					t.Errorf("check %d: %+v, want %s run and passed", i, r, want[i])
				}
			}
			if !v.Accepted || v.Class == "" {
				t.Fatalf("not accepted: %s", v.FailureText())
			}
		})
		skills[s.Skill]++
		if s.Setting == schemas.SettingTools {
			tools++
		}
	}
	for _, skill := range schemas.Skills {
		if skills[skill] < 2 {
			t.Errorf("skill %s has %d sample envs, want >= 2", skill, skills[skill])
		}
	}
	if tools < 2 || len(samples)-tools < 12 {
		t.Errorf("%d games and %d tools envs, want >= 12 and >= 2", len(samples)-tools, tools)
	}
}

func TestChecksRejectBrokenEnvs(t *testing.T) {
	pool := newPool(t, sandbox.IsolationBwrap)
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
	cases := []struct {
		name, code, hint string
		setting          schemas.Setting
		failCheck, want  string
	}{
		{"nondeterministic reset", strings.Replace(strings.Replace(base, "random.Random(seed)", "random.Random()", 1), `return "guess 1..9"`, `return "guess 1..9, not %d" % (self.rng.randint(10, 10**9))`, 1), "think", "games", CheckReset, "not deterministic"},
		{"empty observation", strings.Replace(base, `return "guess 1..9"`, `return ""`, 1), "think", "games", CheckReset, "empty observation"},
		{"step raises on garbage", strings.Replace(base, "ok = action.strip()", "int(action)\n        ok = action.strip()", 1), "think", "games", CheckSmoke, "ValueError"},
		{"infinite reward", strings.Replace(base, "(1.0 if ok else 0.0)", "float('inf')", 1), "think", "games", CheckSmoke, "finite"},
		{"trivial", strings.Replace(base, "ok = action.strip() == str(self.target)", "ok = True", 1), "think", "games", CheckTrivial, "trivial"},
		{"hint leaks a number", strings.Replace(base, "self.rng.randint(1, 9)", "7 if False else 4", 1), "the answer is 4", "games", CheckHintLeak, "number 4"},
		{"hint text solves", strings.Replace(base, "ok = action.strip() == str(self.target)", "ok = action.startswith('say')", 1), "say please", "games", CheckHintLeak, "hint text"},
		{"tools missing", base, "think", "tools", CheckStatic, "tools()"},
		{"bad tool schema", strings.Replace(base, "    def reset", "    def tools(self):\n        return [{\"type\": \"function\", \"function\": {\"name\": \"a b\", \"parameters\": {}}}]\n    def reset", 1), "think", "tools", CheckToolsSchema, "name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Check(context.Background(), pool, c.code, CheckOptions{Setting: c.setting, Hint: c.hint})
			f := v.Failure()
			if v.Accepted || f == nil {
				t.Fatalf("accepted, want %s to fail", c.failCheck)
			}
			if f.Check != c.failCheck || !strings.Contains(f.Error, c.want) {
				t.Fatalf("failed %s: %s; want %s containing %q", f.Check, f.Error, c.failCheck, c.want)
			}
			seenFailure := false
			for _, r := range v.Results {
				if seenFailure && !r.Skipped {
					t.Fatalf("check %s ran after a failure", r.Check)
				}
				if r.Check == f.Check {
					seenFailure = true
				}
			}
		})
	}
}

func TestMachineryFailureIsNotTheProgramsFault(t *testing.T) {
	pool := newPool(t, sandbox.IsolationBwrap)
	pool.Close()
	v := Check(context.Background(), pool, "class A:\n    pass\n", CheckOptions{Hint: "h"})
	if v.Err == nil || v.Accepted {
		t.Fatalf("a closed pool judged the program: %+v", v)
	}
}
