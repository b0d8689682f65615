package gate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// TestStaticCheckKeepsTheSamples: the static check's rules beyond name lookups still pass
// every sample env and every candidate of the recorded run whose static check passed when it
// was recorded, and still reject those it rejected; and the recorded reset failures still read
// exactly as recorded (the harness's line numbers in their tracebacks included).
func TestStaticCheckKeepsTheSamples(t *testing.T) {
	pool := newPool(t, sandbox.IsolationBwrap)
	ctx := context.Background()
	for _, s := range readSamples(t, repoPath("testdata", "envs")) {
		problems, err := pool.StaticCheck(ctx, s.Code, string(s.Setting))
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) > 0 {
			t.Errorf("sample env %s: %s", s.Name, strings.Join(problems, "; "))
		}
	}
	t.Setenv("SPADE_CACHE", t.TempDir()) // the lake's read cache stays out of the user's
	lk, err := lake.Open(ctx, repoPath("testdata", "sample-run"))
	if err != nil {
		t.Fatal(err)
	}
	steps, err := lk.Steps(ctx, "sample", "candidates")
	if err != nil || len(steps) == 0 {
		t.Fatalf("no candidates in the sample run: %v", err)
	}
	checked := 0
	for _, step := range steps {
		candidates, err := lake.ReadStep[schemas.CandidateRow](ctx, lk, "sample", "candidates", step)
		if err != nil {
			t.Fatal(err)
		}
		results, err := lake.ReadStep[schemas.GateResultRow](ctx, lk, "sample", "gate_results", step)
		if err != nil {
			t.Fatal(err)
		}
		staticPassed, resetError := map[string]bool{}, map[string]string{}
		for _, r := range results {
			if r.Check == "static" && !r.Skipped {
				staticPassed[r.EnvID] = r.Passed
			}
			if r.Check == "reset" && !r.Passed && !r.Skipped {
				resetError[r.EnvID] = r.Error
			}
		}
		for _, c := range candidates {
			passed, ok := staticPassed[c.EnvID]
			if !ok || c.Code == "" {
				continue
			}
			problems, err := pool.StaticCheck(ctx, c.Code, string(c.Setting))
			if err != nil {
				t.Fatal(err)
			}
			if passed != (len(problems) == 0) {
				t.Errorf("step %d candidate %s: recorded static check passed=%v, now %q", step, c.EnvID, passed, problems)
			}
			checked++
			if recorded, ok := resetError[c.EnvID]; ok {
				// the error and traceback that reached the Designer's regeneration prompt (and so
				// the recorded requests that replay matches) are the same, harness line numbers included
				_, err := playReset(ctx, pool, c.Code)
				var se *sandbox.Error
				if !errors.As(err, &se) || !strings.Contains(recorded, se.Error()) || !strings.Contains(recorded, strings.TrimSpace(se.Trace)) {
					t.Errorf("step %d candidate %s: reset error %v (trace %q), recorded %q", step, c.EnvID, err, se.Trace, recorded)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no candidate of the sample run was checked")
	}
	t.Logf("%d candidates of the sample run checked", checked)
}

// playReset loads code and calls reset(0) on a fresh instance.
func playReset(ctx context.Context, pool *sandbox.Pool, code string) (string, error) {
	prog, err := pool.Load(ctx, code)
	if err != nil {
		return "", err
	}
	defer prog.Close()
	env, err := prog.NewEnv(ctx)
	if err != nil {
		return "", err
	}
	defer env.Close()
	return env.Reset(ctx, 0)
}
