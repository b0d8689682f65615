package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

var sumRE = regexp.MustCompile(`What is (\d+) \+ (\d+)\?`)

// The runner's list ends with the evaluation, due every eval.every steps only (never by default).
func TestStagesEvaluateEveryEvalEvery(t *testing.T) {
	stages := Stages()
	last := stages[len(stages)-1]
	if last.Name() != "eval" {
		t.Fatalf("last stage %s, want eval", last.Name())
	}
	cfg, _ := config.Preset("qwen3-4b-games")
	for step := int64(0); step < 6; step++ {
		if last.Due(cfg, step) {
			t.Fatalf("eval due at %d with eval.every 0", step)
		}
	}
	cfg.Eval.Every, cfg.Eval.Benches = 3, "m"
	for step, want := range []bool{true, false, false, true, false, false, true} {
		if got := last.Due(cfg, int64(step)); got != want {
			t.Errorf("eval.every 3: due at %d = %v", step, got)
		}
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.Eval.Benches = " , "
	if err := cfg.Validate(); err == nil {
		t.Fatal("eval.every without eval.benches validated")
	}
}

// `spade run` with eval.every 2 evaluates eval.benches at steps 0 and 2 through Execute: the stage
// commits only fragments (one per chunk), and a resumed run asks nothing again.
func TestRunEvaluatesEveryEvalEverySteps(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	var items []schemas.BenchItemRow
	for i := range 3 {
		items = append(items, schemas.BenchItemRow{Bench: "m", ItemID: fmt.Sprintf("i%d", i), Kind: schemas.BenchMath,
			Question: fmt.Sprintf("What is %d + %d?", i, 10*i), Answer: strconv.Itoa(11 * i), Meta: "{}"})
	}
	laketest.Write(t, lk, lake.BenchKey("m"), items)
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		g := sumRE.FindStringSubmatch(llmtest.PromptText(req))
		if g == nil {
			return llmtest.Reply{Text: "no idea"}
		}
		a, _ := strconv.Atoi(g[1])
		b, _ := strconv.Atoi(g[2])
		return llmtest.Reply{Text: fmt.Sprintf("It is \\boxed{%d}.", a+b)}
	}, "agent-model")
	cfg, _ := config.Preset("qwen3-4b-games")
	cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = srv.URL, "agent-model"
	cfg.Eval.Every, cfg.Eval.Benches, cfg.Eval.Samples, cfg.Eval.ChunkItems = 2, "m", 1, 2
	laketest.NewRun(t, lk, "r", cfg)
	env := runEnv(t, lk, "r")
	t.Cleanup(func() { env.Close() })
	only, err := Select(Stages(), []string{"eval"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep, err := Run(ctx, env, []int64{0, 1, 2, 3}, Options{Stages: only, Out: &out})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Timings[0].Ran != 2 || rep.Steps != 2 || rep.Resumed != 2 {
		t.Fatalf("report %+v\n%s", rep, out.String())
	}
	for step := int64(0); step < 4; step++ {
		rows, err := lake.ReadStep[schemas.EvalResultRow](ctx, lk, "r", schemas.EvalResultsSpec.Name, step)
		if err != nil && !errors.Is(err, lake.ErrNotCommitted) {
			t.Fatal(err)
		}
		want := 0
		if step%2 == 0 {
			want = 3
		}
		if len(rows) != want {
			t.Fatalf("step %d: %d eval_results rows, want %d", step, len(rows), want)
		}
		for _, r := range rows {
			if r.Score != 1 || r.Bench != "m" {
				t.Fatalf("step %d: row %+v", step, r)
			}
		}
		if want > 0 {
			for c := 0; c < 2; c++ {
				key := lake.PartitionKey{Run: "r", Table: schemas.EvalResultsSpec.Name, Step: step, Fragment: schemas.EvalFragment("m", c)}
				if ok, err := lk.Committed(ctx, key); err != nil || !ok {
					t.Fatalf("step %d chunk %d not committed: %v", step, c, err)
				}
			}
		}
	}
	asked := srv.Count()
	if asked != 6 {
		t.Fatalf("%d calls for 3 items at 2 steps", asked)
	}
	// A resumed run goes through Execute again (no plain marker partition) and skips every chunk.
	if _, err := Run(ctx, env, []int64{0, 1, 2, 3}, Options{Stages: only}); err != nil {
		t.Fatal(err)
	}
	if srv.Count() != asked {
		t.Fatalf("the resumed run asked %d more calls", srv.Count()-asked)
	}
}
