package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/schemas"
	evalstage "github.com/spadekit/spade/stages/eval"
	"github.com/spadekit/spade/stages/pool"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// TestLakeVerifyExportAndDamage synthesizes a small run, then: verify is clean; lake export writes
// DEST/<table>/data.parquet for every table (what the files hold is internal/export's test) and refuses
// a DEST that is not empty (exit 2); one corrupt byte makes spade query name the file, its table and step
// and the repair command (exit 1) and verify report it; restoring it makes verify clean. A missing lake
// and an unknown run are usage errors that say what exists.
func TestLakeVerifyExportAndDamage(t *testing.T) {
	env := localEnv(t)
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	must(t, env, "--run", "r1", "synth", "--steps", "0-2")
	out := must(t, env, "--run", "r1", "lake", "verify")
	if !strings.Contains(out, "ok:") {
		t.Fatalf("verify of a fresh run: %s", out)
	}

	dest := filepath.Join(t.TempDir(), "export")
	out = must(t, env, "--run", "r1", "lake", "export", dest)
	tables := schemas.RunTables()
	if want := fmt.Sprintf("exported %d tables of run r1 to %s", len(tables), dest); !strings.Contains(out, want) {
		t.Fatalf("lake export said %q, want %q", out, want)
	}
	for _, table := range tables {
		if _, err := os.Stat(filepath.Join(dest, table, "data.parquet")); err != nil {
			t.Fatalf("lake export: %v", err)
		}
	}
	r := spade(t, env, "", "--run", "r1", "lake", "export", dest)
	if r.code != 2 || !strings.Contains(r.stderr, "lake export: "+dest+" exists and is not empty") {
		t.Fatalf("export into a non-empty DEST: exit %d: %s", r.code, r.stderr)
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
	r = spade(t, env, "", "--run", "r1", "query", "select * from episodes")
	if r.code != 1 || !strings.Contains(r.stderr, rel) || !strings.Contains(r.stderr, "rollout --step") {
		t.Fatalf("query over a corrupt file: exit %d: %s", r.code, r.stderr)
	}
	r = spade(t, env, "", "--run", "r1", "lake", "verify")
	if r.code != 1 || !strings.Contains(r.stdout, "corrupt "+rel) {
		t.Fatalf("verify of a corrupt file: exit %d: %s%s", r.code, r.stdout, r.stderr)
	}
	// a byte flipped in the middle of the file, where a reader without the check could decode wrong rows:
	// every reader refuses the file before it reads a row, naming it, its table and step, and the repair
	mid := append([]byte(nil), body...)
	mid[len(mid)/2] ^= 0x01
	if err := os.WriteFile(victim, mid, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"query", "select count(*) from episodes"}, {"metrics"}, {"report", "--out", filepath.Join(t.TempDir(), "r.html")}} {
		r = spade(t, env, "", append([]string{"--run", "r1"}, args...)...)
		if r.code != 1 || !strings.Contains(r.stderr, rel) || !strings.Contains(r.stderr, "table episodes, step") || !strings.Contains(r.stderr, "rollout --step") {
			t.Errorf("%s over a file with a flipped byte: exit %d: %s", args[0], r.code, r.stderr)
		}
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
	must(t, env, "--run", "r1", "synth", "--steps", "0-1")
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

// TestStageOfPartitionFromWrites: every table each stage writes maps to that stage (a table several
// stages write, through the fragment the stage writes it to, or for envs by which stage is due), eval's
// and pool's tables included, and each repair command names a command that exists.
func TestStageOfPartitionFromWrites(t *testing.T) {
	generated := config.Default() // sample.pool empty: the gate writes a refresh step's envs
	fixed := config.Default()
	fixed.Sample.Pool = "fixed" // the pool stage writes them
	// fragments is the fragment each stage writes a table to that other stages write too.
	fragments := map[stage.Name]string{
		stage.Generate: schemas.FragmentGenerate,
		stage.Rollout:  schemas.FragmentRollout,
		evalstage.Name: schemas.EvalFragment("aime25", 3),
	}
	writers := map[string]int{}
	for _, s := range steprun.Stages() {
		for _, table := range s.Writes() {
			writers[table]++
		}
	}
	for _, s := range steprun.Stages() {
		cfg := generated
		if s.Name() == pool.Name {
			cfg = fixed
		}
		for _, table := range s.Writes() {
			key := lake.PartitionKey{Run: "r", Table: table, Step: 0}
			if writers[table] > 1 && table != schemas.EnvsSpec.Name {
				frag, ok := fragments[s.Name()]
				if !ok {
					t.Fatalf("%s writes %s, which other stages write too: add the fragment it writes it to", s.Name(), table)
				}
				key.Fragment = frag
			}
			if got := stageOfPartition(key, cfg); got != string(s.Name()) {
				t.Errorf("%s (fragment %q): stage %s, want %s", table, key.Fragment, got, s.Name())
			}
		}
	}
	cases := []struct {
		key  lake.PartitionKey
		cfg  *config.Config
		want string
	}{
		{lake.PartitionKey{Table: schemas.EvalResultsSpec.Name, Step: 40, Fragment: schemas.EvalFragment("gpqa", 0)}, generated, "eval"},
		{lake.PartitionKey{Table: schemas.LLMCallsSpec.Name, Step: 40, Fragment: schemas.EvalFragment("gpqa", 0)}, generated, "eval"},
		{lake.PartitionKey{Table: schemas.EnvsSpec.Name, Step: 4}, fixed, "pool"},
		{lake.PartitionKey{Table: schemas.EnvsSpec.Name, Step: 4}, generated, "gate"},
		{lake.PartitionKey{Table: schemas.LLMCallsSpec.Name, Step: 0, Fragment: schemas.FragmentScreen}, generated, "gate"},
		{lake.PartitionKey{Table: schemas.LLMCallsSpec.Name, Step: 0, Fragment: schemas.FragmentHint}, generated, "gate"},
		{lake.PartitionKey{Table: schemas.CandidatesSpec.Name, Step: 0, Fragment: schemas.RegenerateFragment(2, 3)}, generated, "gate"},
		{lake.PartitionKey{Table: schemas.CandidatesSpec.Name, Step: 0}, generated, "generate"},
		{lake.PartitionKey{Table: "no_such_table", Step: 0}, generated, "<the stage that writes no_such_table>"},
	}
	for _, c := range cases {
		if got := stageOfPartition(c.key, c.cfg); got != c.want {
			t.Errorf("%s step %d fragment %q: stage %s, want %s", c.key.Table, c.key.Step, c.key.Fragment, got, c.want)
		}
	}
	p := lake.Problem{Kind: lake.ProblemMissing, Partition: lake.PartitionKey{Run: "r", Table: schemas.EnvsSpec.Name, Step: 4}}
	if got, want := repairCommand("/l", "r", fixed, p), "spade --lake /l --run r pool draw --step 4 --force"; got != want {
		t.Errorf("repair of pool's envs: %q, want %q", got, want)
	}
	p.Partition = lake.PartitionKey{Run: "r", Table: schemas.EvalResultsSpec.Name, Step: 40, Fragment: schemas.EvalFragment("gpqa", 0)}
	if got, want := repairCommand("/l", "r", generated, p), "spade --lake /l --run r eval --step 40 --force"; got != want {
		t.Errorf("repair of eval's results: %q, want %q", got, want)
	}
	p.Partition.Fragment = schemas.ImportFragment("tau2")
	if got, want := repairCommand("/l", "r", generated, p), "spade --lake /l --run r eval import --format tau2 --step 40 --force DIR"; got != want {
		t.Errorf("repair of imported results: %q, want %q", got, want)
	}
}
