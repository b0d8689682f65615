package gate

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/stages/stage"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
)

// fixedRegenerator stands in for the Designer: it answers every regeneration with one program.
type fixedRegenerator struct {
	code, hint string
	calls      []string
}

func (f *fixedRegenerator) Regenerate(ctx context.Context, tx *lake.Txn, prev schemas.CandidateRow, gateError string) (schemas.CandidateRow, error) {
	f.calls = append(f.calls, gateError)
	attempt := int(prev.Attempt) + 1
	next := prev
	next.Attempt = int32(attempt)
	next.EnvID = fmt.Sprintf("%s-r%d", strings.Split(prev.EnvID, "-r")[0], attempt)
	next.Code, next.Hint, next.ParseError, next.PreviousError = f.code, f.hint, "", gateError
	return next, nil
}

// newRun creates a lake with a games run and commits candidates at step 0.
func newRun(t *testing.T, cands []schemas.CandidateRow) (*lake.Lake, string) {
	t.Helper()
	lk := laketest.New(t)
	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	// The candidates carry their hints (the inline mode), and the tests count the strict checks' rows.
	cfg.Generate.HintMode, cfg.Gate.Checks = config.HintInline, config.GateStrict
	if err := cfg.Set("sandbox.python", testPython()); err != nil {
		t.Fatal(err)
	}
	laketest.NewRun(t, lk, "r1", cfg)
	laketest.Write(t, lk, lake.PartitionKey{Run: "r1", Table: schemas.CandidatesSpec.Name, Step: 0}, cands)
	return lk, "r1"
}

func candidate(slot int, s sample) schemas.CandidateRow {
	skill := s.Skill
	if skill == "" {
		skill = schemas.SkillMath
	}
	return schemas.CandidateRow{Step: 0, Slot: int32(slot), EnvID: fmt.Sprintf("env-%d", slot), Attempt: 1, Skill: skill,
		Setting: schemas.SettingGames, Code: s.Code, Hint: s.Hint, RawResponse: "```python\n" + s.Code + "```\n<hint>" + s.Hint + "</hint>"}
}

func TestRunCommitsResultsAndEnvs(t *testing.T) {
	envs := readSamples(t, repoPath("testdata", "envs"))
	hostile := readSamples(t, repoPath("testdata", "hostile"))
	var bomb sample
	for _, h := range hostile {
		if h.Name == "fork_bomb" {
			bomb = h
		}
	}
	cands := []schemas.CandidateRow{candidate(0, envs[0]), candidate(1, envs[1]), candidate(2, bomb)}
	unparsed := candidate(3, envs[2])
	unparsed.Code, unparsed.Hint, unparsed.ParseError = "", "", "no fenced python block"
	cands = append(cands, unparsed)
	lk, run := newRun(t, cands)
	ctx := context.Background()
	pool := newPool(t, sandbox.IsolationBwrap)
	regen := &fixedRegenerator{code: envs[3].Code, hint: envs[3].Hint}

	res, err := stage.Within(ctx, poolEnv(t, lk, run, pool, shard.All), stage.Gate, 0, func(ctx context.Context, env *stage.Env, step int64) (Result, error) {
		return Run(ctx, env, step, Options{Regenerator: regen})
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Slots != 4 || res.Accepted != 4 || res.Attempts != 6 || res.Regenerated != 2 {
		t.Fatalf("result %+v, want 4 slots, 4 accepted, 6 attempts, 2 regenerated", res)
	}
	if len(regen.calls) != 2 || !strings.Contains(strings.Join(regen.calls, "\n"), `gate check "static" failed`) {
		t.Fatalf("regenerator saw %q", regen.calls)
	}
	rows, err := lake.ReadRows[schemas.GateResultRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.GateResultsSpec.Name, Step: 0})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 6*len(GamesChecks) {
		t.Fatalf("%d gate_results rows, want %d", len(rows), 6*len(GamesChecks))
	}
	failed := map[string]string{}
	for _, r := range rows {
		if !r.Passed && !r.Skipped {
			failed[r.EnvID] = r.Check + ": " + r.Error
		}
	}
	if !strings.Contains(failed["env-2"], "static: ") || !strings.Contains(failed["env-2"], "'os'") {
		t.Errorf("fork bomb row: %q", failed["env-2"])
	}
	if !strings.Contains(failed["env-3"], "could not be parsed") {
		t.Errorf("unparsed row: %q", failed["env-3"])
	}
	accepted, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.EnvsSpec.Name, Step: 0})
	if err != nil {
		t.Fatal(err)
	}
	bySlot := map[int32]schemas.EnvRow{}
	for _, e := range accepted {
		bySlot[e.Slot] = e
	}
	if len(bySlot) != 4 || bySlot[2].Attempt != 2 || bySlot[2].EnvID != "env-2-r2" || bySlot[0].ClassName == "" || len(bySlot[1].CodeSHA256) != 64 {
		t.Fatalf("envs %+v", bySlot)
	}
	again, err := stage.Execute(ctx, poolEnv(t, lk, run, pool, shard.All), Stage{}, 0)
	if err != nil || !again.Skipped {
		t.Fatalf("second run: %+v, %v; want skipped", again, err)
	}
}

func TestRunWithoutRegeneratorJudgesLakeOnly(t *testing.T) {
	envs := readSamples(t, repoPath("testdata", "envs"))
	bad := candidate(1, envs[1])
	bad.Code = "class Nothing:\n    pass\n"
	second := candidate(1, envs[4])
	second.Attempt, second.EnvID = 2, "env-1-a2"
	lk, run := newRun(t, []schemas.CandidateRow{candidate(0, envs[0]), bad, second})
	pool := newPool(t, sandbox.IsolationBwrap)
	res, err := stage.Within(context.Background(), poolEnv(t, lk, run, pool, shard.Spec{Index: 1, Count: 2}), stage.Gate, 0, func(ctx context.Context, env *stage.Env, step int64) (Result, error) {
		return Run(ctx, env, step, Options{})
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Slots != 1 || res.Accepted != 1 || res.Attempts != 2 || res.Regenerated != 0 {
		t.Fatalf("shard 1: %+v", res)
	}
	if _, err := stage.Within(context.Background(), poolEnv(t, lk, run, pool, shard.Spec{Index: 0, Count: 2}), stage.Gate, 0, func(ctx context.Context, env *stage.Env, step int64) (Result, error) {
		return Run(ctx, env, step, Options{})
	}); err != nil {
		t.Fatal(err)
	}
	accepted, err := lake.ReadRows[schemas.EnvRow](context.Background(), lk, lake.PartitionKey{Run: run, Table: schemas.EnvsSpec.Name, Step: 0})
	if err != nil || len(accepted) != 2 {
		t.Fatalf("envs after both shards: %d, %v", len(accepted), err)
	}
}

// failingRegenerator answers with a broken program every time, to prove the attempt cap.
type failingRegenerator struct{ calls int }

func (f *failingRegenerator) Regenerate(ctx context.Context, tx *lake.Txn, prev schemas.CandidateRow, gateError string) (schemas.CandidateRow, error) {
	f.calls++
	next := prev
	next.Attempt++
	next.EnvID = fmt.Sprintf("env-%d-a%d", prev.Slot, next.Attempt)
	next.Code = "class Broken:\n    def reset(self, seed):\n        return undefined_name\n    def step(self, action):\n        return '', 0.0, True, {}\n"
	return next, nil
}

func TestRegenerationStopsAtMaxAttempts(t *testing.T) {
	envs := readSamples(t, repoPath("testdata", "envs"))
	bad := candidate(0, envs[0])
	bad.Code = "x = 1\n"
	lk, run := newRun(t, []schemas.CandidateRow{bad})
	regen := &failingRegenerator{}
	res, err := stage.Within(context.Background(), poolEnv(t, lk, run, newPool(t, sandbox.IsolationBwrap), shard.All), stage.Gate, 0, func(ctx context.Context, env *stage.Env, step int64) (Result, error) {
		return Run(ctx, env, step, Options{Regenerator: regen})
	})
	if err != nil {
		t.Fatal(err)
	}
	// gate.max_attempts is 5: attempt 1 from the lake, 2..5 regenerated
	if res.Accepted != 0 || res.Attempts != 5 || regen.calls != 4 {
		t.Fatalf("%+v after %d regenerations; want 5 attempts, 4 regenerations, none accepted", res, regen.calls)
	}
	rows, err := lake.ReadRows[schemas.GateResultRow](context.Background(), lk, lake.PartitionKey{Run: run, Table: schemas.GateResultsSpec.Name, Step: 0})
	if err != nil {
		t.Fatal(err)
	}
	var last string
	for _, r := range rows {
		if r.Attempt == 5 && !r.Passed && !r.Skipped {
			last = r.Check + ": " + r.Error
		}
	}
	if !strings.Contains(last, "reset: ") || !strings.Contains(last, "NameError") {
		t.Fatalf("attempt 5 failure %q, want reset NameError", last)
	}
}

// poolEnv returns the stage.Env of run for one shard, running programs in pool.
func poolEnv(t *testing.T, lk *lake.Lake, run string, pool *sandbox.Pool, spec shard.Spec) *stage.Env {
	t.Helper()
	env, err := stage.NewEnv(context.Background(), lk, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.Shard = spec
	env.SetPool(pool)
	return env
}
