package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestLakeUpgradeLayoutOne: testdata/lake-v1 is the demo's lake as spade wrote it in layout 1 (padded
// step folders, fragment=NAME folders, commit records). Every command refuses it with the upgrade command
// (exit 1, nothing written); `spade lake upgrade` renames every object; afterwards verify is clean and
// every table holds the rows a fresh replay of the demo writes in layout 2; a second upgrade does nothing.
func TestLakeUpgradeLayoutOne(t *testing.T) {
	if testing.Short() {
		t.Skip("replays the demo to compare with the upgraded lake; skipped with -short")
	}
	old := filepath.Join(t.TempDir(), "old")
	if err := os.CopyFS(old, os.DirFS(repoFile("testdata/lake-v1"))); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(old, "README.md"))
	env := []string{"SPADE_LAKE=" + old, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN=demo"}

	for _, args := range [][]string{{"query", "select count(*) from episodes"}, {"lake", "ls"}, {"rollout", "--step", "3"}} {
		r := spade(t, env, "", args...)
		if r.code != 1 || !strings.Contains(r.stderr, "lake upgrade") || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Errorf("spade %v on a layout-1 lake: exit %d, stderr %q; want exit 1 and one line naming `spade lake upgrade`", args, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(old, "_lake.json")); err == nil {
		t.Fatal("a refused command wrote the layout file")
	}

	if out := must(t, env, "lake", "upgrade"); !strings.Contains(out, "renamed") {
		t.Fatalf("upgrade: %s", out)
	}
	layoutOne := regexp.MustCompile(`(^|/)(step=0[0-9]|fragment=)`)
	parts := 0
	filepath.WalkDir(old, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(old, path)
		if layoutOne.MatchString(filepath.ToSlash(rel)) {
			t.Errorf("left in layout 1: %s", rel)
		}
		if strings.HasSuffix(path, ".parquet") {
			parts++
		}
		return nil
	})
	if parts == 0 {
		t.Fatal("the upgrade left no part file")
	}
	if out := must(t, env, "lake", "verify"); !strings.Contains(out, "ok:") {
		t.Errorf("verify after upgrade: %s", out)
	}
	if out := must(t, env, "lake", "upgrade"); !strings.Contains(out, "nothing to do") {
		t.Errorf("second upgrade: %s", out)
	}
	// docs/lake.md's glob over the lake itself (fragments included) gives spade query's rows, step an integer.
	for _, table := range []string{"candidates", "gate_results", "envs", "episodes", "turns", "llm_calls", "designer_rewards", "memory"} {
		checkLakeGlob(t, env, old, "demo", table)
	}

	fresh := filepath.Join(t.TempDir(), "fresh")
	runDemoIn(t, fresh)
	freshEnv := []string{"SPADE_LAKE=" + fresh, "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN=demo"}
	// Timings (latencies, CPU seconds) differ between two replays; what the stages decided does not.
	for _, q := range []string{
		"select step, count(*) from candidates group by all order by all",
		"select step, slot, env_id, attempt, class_name, skill, code_sha256, hint from envs order by all",
		`select step, slot, env_id, attempt, "check", passed, skipped from gate_results order by all`,
		"select step, episode_id, env_id, hinted, return, success, ended_by, turns from episodes order by all",
		"select step, episode_id, turn, observation, action, reward, done from turns order by all",
		"select step, role, count(*), sum(prompt_tokens), sum(completion_tokens) from llm_calls group by all order by all",
		"select step, env_id, regret, reward from designer_rewards order by all",
		"select count(*) from corpus",
	} {
		got, want := must(t, env, "query", q), must(t, freshEnv, "query", q)
		if got != want || strings.Count(got, "\n") < 2 {
			t.Errorf("%s\nupgraded layout-1 lake:\n%s\nfresh replay:\n%s", q, got, want)
		}
	}
}

// checkLakeGlob compares read_parquet('<lake>/runs/<run>/<table>/**/*.parquet', hive_partitioning = true)
// with spade query's rows of the table (less the run column the views add), and checks that step is read
// as a BIGINT.
func checkLakeGlob(t *testing.T, env []string, lakeDir, run, table string) {
	t.Helper()
	glob := filepath.Join(lakeDir, "runs", run, table, "**", "*.parquet")
	source := "read_parquet('" + glob + "', hive_partitioning = true)"
	// The view also shows the columns a newer schema added (NULL over older files); the glob gives the
	// columns the files hold, so the comparison runs over those.
	names := must(t, env, "--run", run, "query", "--format", "csv", "select column_name from (describe select * from "+source+")")
	columns := strings.Split(strings.TrimSpace(names), "\n")[1:]
	for i, c := range columns {
		columns[i] = `"` + strings.Trim(c, `"`) + `"`
	}
	list := strings.Join(columns, ", ")
	want := must(t, env, "--run", run, "query", "--format", "csv", "select "+list+" from "+table+" order by all")
	got := must(t, env, "--run", run, "query", "--format", "csv", "select "+list+" from "+source+" order by all")
	if got != want || strings.Count(want, "\n") < 2 {
		t.Errorf("%s: the lake glob gives %d lines, spade query %d", table, strings.Count(got, "\n"), strings.Count(want, "\n"))
	}
	typ := must(t, env, "--run", run, "query", "--format", "csv", "select distinct typeof(step) from read_parquet('"+glob+"', hive_partitioning = true)")
	if strings.TrimSpace(typ) != "typeof(step)\nBIGINT" {
		t.Errorf("%s: step read by the glob as %q, want BIGINT", table, typ)
	}
}
