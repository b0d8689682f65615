package gate

import (
	"context"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// TestStaticCheckKeepsTheSamples: the static check's second-round rules (issue 11) still pass
// every sample env and every candidate of the recorded run whose static check passed when it
// was recorded, and still reject those it rejected.
func TestStaticCheckKeepsTheSamples(t *testing.T) {
	pool := newPool(t, sandbox.IsolationBwrap)
	ctx := context.Background()
	for _, s := range readSamples(t, repoPath("testdata", "envs")) {
		problems, err := pool.StaticCheck(ctx, s.Code, s.Setting)
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
		staticPassed := map[string]bool{}
		for _, r := range results {
			if r.Check == "static" && !r.Skipped {
				staticPassed[r.EnvID] = r.Passed
			}
		}
		for _, c := range candidates {
			passed, ok := staticPassed[c.EnvID]
			if !ok || c.Code == "" {
				continue
			}
			problems, err := pool.StaticCheck(ctx, c.Code, c.Setting)
			if err != nil {
				t.Fatal(err)
			}
			if passed != (len(problems) == 0) {
				t.Errorf("step %d candidate %s: recorded static check passed=%v, now %q", step, c.EnvID, passed, problems)
			}
			checked++
		}
	}
	if checked == 0 {
		t.Fatal("no candidate of the sample run was checked")
	}
	t.Logf("%d candidates of the sample run checked", checked)
}
