package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/schemas"
)

// TestLakeVerifyExportAndDamage synthesizes a small run, then: verify is clean; an export read by DuckDB
// with read_parquet(glob, hive_partitioning = true) gives exactly spade query's rows for every table,
// step a BIGINT; one corrupt byte makes spade query name the file, its table and step and the repair
// command (exit 1) and verify report it; restoring it makes verify clean. A missing lake and an unknown
// run are usage errors that say what exists.
func TestLakeVerifyExportAndDamage(t *testing.T) {
	env := localEnv(t)
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	must(t, env, "--run", "r1", "synth", "--steps", "3")
	out := must(t, env, "--run", "r1", "lake", "verify")
	if !strings.Contains(out, "ok:") {
		t.Fatalf("verify of a fresh run: %s", out)
	}

	dest := filepath.Join(t.TempDir(), "export")
	must(t, env, "--run", "r1", "lake", "export", dest)
	db, err := duck.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, table := range schemas.RunTables() {
		want := must(t, env, "--run", "r1", "query", "--format", "csv", fmt.Sprintf("select * from %s order by all", table))
		glob := filepath.Join(dest, table, "*.parquet")
		got := must(t, env, "--run", "r1", "query", "--format", "csv", fmt.Sprintf("select * from read_parquet('%s', hive_partitioning = true) order by all", glob))
		if got != want {
			t.Fatalf("%s: the export read with a glob differs from spade query", table)
		}
		var typ string
		err := db.QueryRowContext(context.Background(), fmt.Sprintf("select data_type from (describe select * from read_parquet('%s', hive_partitioning = true)) where column_name = 'step'", glob)).Scan(&typ)
		if err == nil && typ != "BIGINT" {
			t.Fatalf("%s: step is %s, want BIGINT", table, typ)
		}
	}

	var victim string
	filepath.WalkDir(filepath.Join(lakeDir, "runs", "r1", "episodes"), func(path string, d os.DirEntry, err error) error {
		if victim == "" && err == nil && strings.HasSuffix(path, ".parquet") {
			victim = path
		}
		return nil
	})
	body, err := os.ReadFile(victim)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), body...)
	bad[len(bad)-20] ^= 0xff // inside the footer: DuckDB cannot decode it
	if err := os.WriteFile(victim, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	rel := filepath.ToSlash(strings.TrimPrefix(victim, lakeDir+"/"))
	r := spade(t, env, "", "--run", "r1", "query", "select * from episodes")
	if r.code != 1 || !strings.Contains(r.stderr, rel) || !strings.Contains(r.stderr, "rollout --step") {
		t.Fatalf("query over a corrupt file: exit %d: %s", r.code, r.stderr)
	}
	r = spade(t, env, "", "--run", "r1", "lake", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, "corrupt "+rel) {
		t.Fatalf("verify of a corrupt file: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(victim, body, 0o644); err != nil {
		t.Fatal(err)
	}
	must(t, env, "--run", "r1", "lake", "verify")

	r = spade(t, env, "", "--lake", filepath.Join(t.TempDir(), "nowhere"), "--run", "r1", "lake", "verify")
	if r.code != 2 || !strings.Contains(r.stderr, "no lake at") {
		t.Fatalf("missing lake: exit %d: %s", r.code, r.stderr)
	}
	r = spade(t, env, "", "--run", "r2", "lake", "verify")
	if r.code != 2 || !strings.Contains(r.stderr, `did you mean "r1"`) || !strings.Contains(r.stderr, "init") {
		t.Fatalf("unknown run: exit %d: %s", r.code, r.stderr)
	}
}

// TestLakeGlobAfterVacuum: a glob over the lake itself also reads an orphaned part (a killed writer's),
// as docs/lake.md warns; once `spade lake vacuum` removed it, the glob gives exactly spade query's rows for
// every table, with step an integer.
func TestLakeGlobAfterVacuum(t *testing.T) {
	env := localEnv(t)
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	must(t, env, "--run", "r1", "synth", "--steps", "2")
	parts, _ := filepath.Glob(filepath.Join(lakeDir, "runs", "r1", "episodes", "step=1", "part-*.parquet"))
	if len(parts) == 0 {
		t.Fatal("no episodes part at step=1")
	}
	body, err := os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(filepath.Dir(parts[0]), "part-g000000-0000-killedwriter-00.parquet")
	if err := os.WriteFile(orphan, body, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(orphan, old, old)
	glob := filepath.Join(lakeDir, "runs", "r1", "episodes", "**", "*.parquet")
	count := func(from string) string {
		return must(t, env, "--run", "r1", "query", "--format", "csv", "select count(*) from "+from)
	}
	if withOrphan, committed := count("read_parquet('"+glob+"', hive_partitioning = true)"), count("episodes"); withOrphan == committed {
		t.Fatalf("the glob did not see the orphan: %s vs %s", withOrphan, committed)
	}
	if out := must(t, env, "--run", "r1", "lake", "vacuum"); !strings.Contains(out, "killedwriter") {
		t.Fatalf("vacuum did not remove the orphan: %s", out)
	}
	for _, table := range schemas.RunTables() {
		if strings.TrimSpace(count(table)) == "count_star()\n0" {
			continue // synth writes no rows there
		}
		checkLakeGlob(t, env, lakeDir, "r1", table)
	}
}
