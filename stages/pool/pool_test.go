package pool_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/pool"
	"github.com/spadekit/spade/stages/stage"
)

// fakeCheck accepts a program unless its code contains "BROKEN".
func fakeCheck(_ context.Context, p pool.Program, _ schemas.Setting) pool.Verdict {
	if strings.Contains(p.Code, "BROKEN") {
		return pool.Verdict{Reason: "gate check \"load\" failed: SyntaxError"}
	}
	return pool.Verdict{Accepted: true, Class: "Env"}
}

func write(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestImportKeepsWhatPassesAndRefusesBadFiles(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	dir := t.TempDir()
	py := t.TempDir()
	write(t, py, "a.py", "class A: pass\n")
	write(t, py, "a.hint", "press 1\n")
	write(t, py, "b.py", "BROKEN(\n")
	jsonl := write(t, dir, "more.jsonl", `{"id": 7, "code": "class C: pass", "skill": "optimization"}`+"\n"+`{"code": "class D: pass", "hint": "h"}`+"\n")
	res, err := pool.Import(ctx, lk, pool.Spec{Name: "fixed", Setting: schemas.SettingGames, Inputs: []string{py, jsonl}}, fakeCheck)
	if err != nil {
		t.Fatal(err)
	}
	if res.Imported != 3 || len(res.Rejected) != 1 || res.Rejected[0].ID != "b" || res.Total != 3 {
		t.Fatalf("mixed import: %+v", res)
	}
	rows, err := pool.Read(ctx, lk, "fixed")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]schemas.PoolRow{}
	for _, r := range rows {
		got[r.EntryID] = r
	}
	if got["a"].Hint != "press 1" || got["7"].Skill != schemas.SkillOptimize || got["more.jsonl:2"].Hint != "h" || got["a"].ClassName != "Env" {
		t.Fatalf("rows: %+v", rows)
	}
	// Again: duplicates by id are skipped; nothing new commits nothing.
	res, err = pool.Import(ctx, lk, pool.Spec{Name: "fixed", Setting: schemas.SettingGames, Inputs: []string{jsonl}}, fakeCheck)
	if err != nil || res.Skipped != 2 || res.Imported != 0 || res.Total != 3 {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	// Bad inputs: an InputError naming the file, nothing committed.
	for name, in := range map[string]string{
		"no code":     write(t, dir, "nocode.jsonl", `{"id": "x", "text": "hello"}`+"\n"),
		"not json":    write(t, dir, "bad.jsonl", "{nope\n"),
		"bad skill":   write(t, dir, "skill.jsonl", `{"code": "class E: pass", "skill": "juggling"}`+"\n"),
		"format":      write(t, dir, "envs.txt", "class F: pass"),
		"empty":       write(t, dir, "empty.py", ""),
		"missing":     filepath.Join(dir, "absent.py"),
		"not parquet": write(t, dir, "x.parquet", "not parquet"),
	} {
		_, err := pool.Import(ctx, lk, pool.Spec{Name: "other", Setting: schemas.SettingGames, Inputs: []string{py, in}}, fakeCheck)
		var inputErr *pool.InputError
		if !errors.As(err, &inputErr) || inputErr.File != in || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := pool.Read(ctx, lk, "other"); err == nil || !strings.Contains(err.Error(), " pool import --name other DIR") {
		t.Fatalf("a refused import committed something: %v", err)
	}
	// Every program fails: nothing committed.
	only := t.TempDir()
	write(t, only, "b.py", "BROKEN(\n")
	if _, err := pool.Import(ctx, lk, pool.Spec{Name: "other", Setting: schemas.SettingGames, Inputs: []string{only}}, fakeCheck); !errors.Is(err, pool.ErrNothingAccepted) {
		t.Fatalf("all rejected: %v", err)
	}
	// A tools import into a games pool is refused.
	var inputErr *pool.InputError
	if _, err := pool.Import(ctx, lk, pool.Spec{Name: "fixed", Setting: schemas.SettingTools, Inputs: []string{jsonl}}, fakeCheck); !errors.As(err, &inputErr) {
		t.Fatalf("setting mismatch: %v", err)
	}
}

func poolRows(n int) []schemas.PoolRow {
	rows := make([]schemas.PoolRow, n)
	for i := range rows {
		rows[i] = schemas.PoolRow{EntryID: fmt.Sprintf("p%02d", i), Code: fmt.Sprintf("class P%d: pass", i), Setting: schemas.SettingGames,
			CodeSHA256: strings.Repeat("0", 64)}
	}
	rows[0].Skill = schemas.SkillCausal
	return rows
}

// Pools rotate through the whole static pool, envs_per_step at a time, no program twice within a pool,
// the same rows on every call.
func TestEnvsRotateThroughThePool(t *testing.T) {
	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Sample.Pool, cfg.Sample.EnvsPerStep, cfg.Sample.RefreshEvery = "fixed", 4, 2
	rows := poolRows(10)
	count := map[string]int{}
	ids := map[string]bool{}
	for step := int64(0); step < 20; step += 2 { // 10 pools × 4 = 40 = 4 rounds of 10
		envs, err := pool.Envs(cfg, step, rows)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := pool.Envs(cfg, step, rows)
		if fmt.Sprint(envs) != fmt.Sprint(again) || len(envs) != 4 {
			t.Fatalf("step %d: %d envs, reproducible %v", step, len(envs), fmt.Sprint(envs) == fmt.Sprint(again))
		}
		inPool := map[string]bool{}
		for _, e := range envs {
			if err := e.Validate(); err != nil {
				t.Fatal(err)
			}
			if inPool[e.Code] || ids[e.EnvID] || e.PoolStep != step {
				t.Fatalf("step %d: %+v repeats", step, e)
			}
			inPool[e.Code], ids[e.EnvID] = true, true
			count[e.Code]++
			if e.Code == rows[0].Code && e.Skill != schemas.SkillCausal {
				t.Fatalf("imported skill lost: %+v", e)
			}
		}
	}
	for _, r := range rows {
		if count[r.Code] != 4 {
			t.Fatalf("%s used %d times in 4 rounds: %v", r.EntryID, count[r.Code], count)
		}
	}
	cfg.Sample.EnvsPerStep = 24
	if envs, _ := pool.Envs(cfg, 0, rows); len(envs) != 10 {
		t.Fatalf("a pool smaller than envs_per_step gives %d envs, want all 10", len(envs))
	}
	cfg.Setting = schemas.SettingTools
	if _, err := pool.Envs(cfg, 0, rows); err == nil {
		t.Fatal("games pool in a tools run accepted")
	}
}

// The pool stage is due where the refresh stages are not, and they refuse to run with a message that
// names sample.pool.
func TestPoolStageTakesTheRefreshSteps(t *testing.T) {
	ctx := context.Background()
	cfg, _ := config.Preset("qwen3-4b-games")
	cfg.Sample.Pool, cfg.Sample.EnvsPerStep = "fixed", 3
	lk, _ := laketest.Run(t, cfg)
	env, err := stage.NewEnv(ctx, lk, "r", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stage.Execute(ctx, env, pool.Stage{}, 0); err == nil || !strings.Contains(err.Error(), "spade --lake "+env.Lake.URI()+" pool import --name fixed DIR") {
		t.Fatalf("missing pool: %v", err)
	}
	laketest.Write(t, lk, lake.PoolKey("fixed"), poolRows(5))
	out, err := stage.Execute(ctx, env, pool.Stage{}, 0)
	if err != nil || !strings.Contains(out.Summary, "3 envs from pool fixed") {
		t.Fatalf("%+v %v", out, err)
	}
	if stage.RefreshDue(cfg, 0) || !stage.PoolDue(cfg, 0) || stage.PoolDue(cfg, 1) {
		t.Fatal("due")
	}
	if _, err := stage.Execute(ctx, env, pool.Stage{}, 1); !errors.Is(err, stage.ErrNotDue) {
		t.Fatalf("step 1: %v", err)
	}
	cfg.Sample.Pool = ""
	if stage.PoolDue(cfg, 0) || !stage.RefreshDue(cfg, 0) {
		t.Fatal("due without a pool")
	}
}

// RefusalCounts groups the rejected programs by their refusal reason (Reason where a rejection has none),
// most frequent first and ties alphabetically; RefusalSummary writes them on one line.
func TestRefusalCounts(t *testing.T) {
	res := pool.Result{Rejected: []pool.Rejection{
		{ID: "a", Reason: "long a", Refusal: "import of os"},
		{ID: "b", Reason: "validate: reward 11"},
		{ID: "c", Reason: "long c", Refusal: "import of os"},
		{ID: "d", Reason: "long d", Refusal: "load: no class"},
		{ID: "e", Reason: "long e", Refusal: "import of os"},
		{ID: "f", Reason: "long f", Refusal: "load: no class"},
	}}
	got := res.RefusalCounts()
	want := []pool.RefusalCount{{Reason: "import of os", Count: 3}, {Reason: "load: no class", Count: 2}, {Reason: "validate: reward 11", Count: 1}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	if s := res.RefusalSummary(); s != "refused 6: 3 import of os, 2 load: no class, 1 validate: reward 11" {
		t.Fatalf("summary %q", s)
	}
	if s := (pool.Result{}).RefusalSummary(); s != "" {
		t.Fatalf("summary of no rejection %q", s)
	}
}
