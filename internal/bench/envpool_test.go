package bench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

func sha(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestImportEnvPool maps a pool and a run's envs at a step to env_pool items (no hint read), skips
// duplicates, and refuses an id that two sources give different code, a missing pool and a bad source.
func TestImportEnvPool(t *testing.T) {
	ctx := context.Background()
	lk := laketest.New(t)
	pool := []schemas.PoolRow{{EntryID: "p1", Code: "class A: pass", Hint: "secret", Setting: schemas.SettingGames, ClassName: "A", CodeSHA256: sha("class A: pass")}}
	laketest.Write(t, lk, lake.PoolKey("fixed"), pool)
	laketest.NewRun(t, lk, "r", config.Default())
	envs := []schemas.EnvRow{{Step: 0, EnvID: "e1", Skill: "math_reasoning", Setting: schemas.SettingTools, ClassName: "B", Code: "class B: pass",
		Hint: "secret", CodeSHA256: sha("class B: pass")}}
	laketest.Write(t, lk, lake.PartitionKey{Run: "r", Table: schemas.EnvsSpec.Name, Step: 0}, envs)
	res, err := ImportEnvPool(ctx, lk, "held", []string{"fixed"}, []string{"r@0"})
	if err != nil || res.Imported != 2 || res.Total != 2 {
		t.Fatalf("import: %+v, %v", res, err)
	}
	items, err := Items(ctx, lk, "held")
	if err != nil {
		t.Fatal(err)
	}
	if items[0].ItemID != "e1" || items[0].Question != "class B: pass" || items[0].Source != "r@0" ||
		items[1].ItemID != "p1" || items[1].Source != "pool:fixed" {
		t.Fatalf("items %+v", items)
	}
	for _, it := range items {
		if it.Kind != schemas.BenchEnvPool || strings.Contains(it.Meta+it.Answer, "secret") {
			t.Errorf("item %+v", it)
		}
	}
	if m, err := ParseEnvPoolMeta(items[0].Meta); err != nil || m.Setting != schemas.SettingTools || m.ClassName != "B" || m.Skill != "math_reasoning" {
		t.Errorf("meta %+v, %v", m, err)
	}
	res, err = ImportEnvPool(ctx, lk, "held", []string{"fixed"}, nil)
	if err != nil || res.Imported != 0 || res.Skipped != 1 || res.Total != 2 {
		t.Errorf("re-import: %+v, %v", res, err)
	}
	other := []schemas.PoolRow{{EntryID: "e1", Code: "class C: pass", Setting: schemas.SettingGames, CodeSHA256: sha("class C: pass")}}
	laketest.Commit(ctx, lk, lake.PoolKey("clash"), other, lake.WriteOptions{})
	var inErr *InputError
	for _, c := range []struct{ pools, runs []string }{{[]string{"clash"}, []string{"r@0"}}, {[]string{"missing"}, nil}, {nil, []string{"r@7"}}, {nil, []string{"r"}}, {nil, nil}} {
		if _, err := ImportEnvPool(ctx, lk, "x", c.pools, c.runs); !errors.As(err, &inErr) {
			t.Errorf("%v %v: %v, want an InputError", c.pools, c.runs, err)
		}
	}
	if _, err := Import(ctx, lk, "x", schemas.BenchEnvPool, []string{"f.jsonl"}); !errors.As(err, &inErr) {
		t.Errorf("env_pool from files: %v", err)
	}
}
