package main

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/schemas"
)

func repoFile(name string) string { return filepath.Join("..", "..", name) }

// usageMessage returns the first line of a usage error's stderr and whether it has the two lines every
// usage error prints: what was wrong, then the command's usage line.
func usageMessage(stderr string) (string, bool) {
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "usage: spade") {
		return stderr, false
	}
	return lines[0], true
}

func TestInitEveryPreset(t *testing.T) {
	env := localEnv(t)
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	for _, preset := range config.PresetNames() {
		run := "run-" + preset
		out := must(t, env, "--run", run, "init", "--preset", preset, "--set", "rollout.group_size=8")
		if !strings.Contains(out, "created run "+run) {
			t.Errorf("init %s said %q", preset, out)
		}
		body, err := os.ReadFile(filepath.Join(lakeDir, "runs", run, "run.json"))
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse(body)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := config.Preset(preset)
		want.Rollout.GroupSize = 8
		if !reflect.DeepEqual(cfg, want) {
			t.Errorf("run.json of %s is %+v, want the preset with the override", preset, cfg)
		}
	}
}

func TestInitRefusals(t *testing.T) {
	env := localEnv(t)
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	cfgFile := filepath.Join(t.TempDir(), "cfg.json")
	os.WriteFile(cfgFile, []byte(`{"rollout": {"group_size": 4, "max_turn": 3}}`), 0o644)
	badType := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(badType, []byte(`{"rollout.paired_seeds": "yes"}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--run", "a", "init", "--set", "rollout.groupsize=8"}, `"rollout.groupsize"`},
		{[]string{"--run", "a", "init", "--set", "rollout.group_size=many"}, `"rollout.group_size" wants an integer`},
		{[]string{"--run", "a", "init", "--set", "rollout.paired_seeds=maybe"}, `"rollout.paired_seeds" wants true or false`},
		{[]string{"--run", "a", "init", "--set", "grpo.lr"}, `want key=value`},
		{[]string{"--run", "a", "init", "--config", cfgFile}, `"rollout.max_turn"`},
		{[]string{"--run", "a", "init", "--config", badType}, `"rollout.paired_seeds"`},
		{[]string{"--run", "a", "init", "--preset", "qwen3-2b-games"}, `unknown preset "qwen3-2b-games"`},
		{[]string{"--run", "a", "init", "--set", "regret.band_lo=0.9"}, `"regret.band_lo"`},
		{[]string{"init"}, "no run named"},
		{[]string{"--run", "../x", "init"}, "invalid name"},
	} {
		r := spade(t, env, "", tc.args...)
		if msg, ok := usageMessage(r.stderr); r.code != 2 || !ok || !strings.Contains(msg, tc.want) {
			t.Errorf("spade %s: exit %d, stderr %q; want exit 2, one line naming %s and the usage line", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(lakeDir, "runs", "a")); err == nil {
		t.Fatal("a refused init created the run")
	}
	must(t, env, "--run", "a", "init", "--preset", "qwen3-4b-tools")
	r := spade(t, env, "", "--run", "a", "init", "--preset", "qwen3-8b-games")
	if r.code != 2 || !strings.Contains(r.stderr, "run already exists: a") {
		t.Fatalf("init of an existing run: exit %d, %q", r.code, r.stderr)
	}
	body, _ := os.ReadFile(filepath.Join(lakeDir, "runs", "a", "run.json"))
	if cfg, _ := config.Parse(body); cfg == nil || cfg.Preset != "qwen3-4b-tools" {
		t.Fatal("a refused init changed the existing run")
	}
}

func TestInitRejectsInvalidEnums(t *testing.T) {
	env := localEnv(t)
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	cfgFile := filepath.Join(t.TempDir(), "cfg.json")
	os.WriteFile(cfgFile, []byte(`{"setting": "arcade"}`), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--run", "a", "init", "--set", "regret.variant=typo"},
			`config: key "regret.variant" must be one of regret_anchor, regret, anchor, ema_lp, regret_based; got "typo"`},
		{[]string{"--run", "a", "init", "--set", "grpo.publish=s3"}, `key "grpo.publish" must be one of lora, command, none`},
		{[]string{"--run", "a", "init", "--set", "outcome.exclude_ended_by=env_error,crash"},
			`key "outcome.exclude_ended_by": unknown ended_by value "crash" (one of done, env_truncated, max_turns, truncated, env_error, timeout, agent_error)`},
		{[]string{"--run", "a", "init", "--config", cfgFile}, `key "setting" must be one of games, tools; got "arcade"`},
	} {
		r := spade(t, env, "", tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || !isUsageError(r.stderr) {
			t.Errorf("spade %s: exit %d, stderr %q; want exit 2, what was wrong (naming %s) and the usage line", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(lakeDir, "runs", "a")); err == nil {
		t.Fatal("a refused init created the run")
	}
	must(t, env, "--run", "b", "init", "--set", "outcome.exclude_ended_by=env_error,timeout,agent_error", "--set", "outcome.value=success")
	body, _ := os.ReadFile(filepath.Join(lakeDir, "runs", "b", "run.json"))
	if cfg, err := config.Parse(body); err != nil || cfg.Outcome.ExcludeEndedBy != "env_error,timeout,agent_error" || cfg.Outcome.Value != config.OutcomeSuccess {
		t.Fatalf("init --set of the outcome keys gave %+v, %v", cfg, err)
	}
	help := must(t, env, "init", "--help")
	for _, want := range []string{"regret.variant  one of regret_anchor | regret | anchor | ema_lp", "outcome.value  one of return | success",
		"outcome.exclude_ended_by", "env_error,timeout"} {
		if !strings.Contains(help, want) {
			t.Errorf("init --help does not mention %q:\n%s", want, help)
		}
	}
}

func TestCorpusImportBadInput(t *testing.T) {
	env := localEnv(t)
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	db, err := duck.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	parquet := func(name, query string) string {
		p := filepath.Join(dir, name)
		if _, err := db.Exec(fmt.Sprintf("copy (%s) to '%s' (format parquet)", query, p)); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.jsonl", `{"id": 1, "text": "fine"}`+"\n")
	for _, tc := range []struct {
		file, want string
	}{
		{filepath.Join(dir, "missing.jsonl"), "cannot read"},
		{write("docs.csv", "id,text\n1,hello\n"), `unsupported format ".csv"`},
		{parquet("notext.parquet", "select 'a' as id, 'b' as body"), `no "text" column`},
		{parquet("badutf8.parquet", "select 'a' as id, from_hex('68ff69') as text"), "corpus.text: not valid UTF-8"},
		{write("badutf8.jsonl", "{\"id\": \"a\", \"text\": \"h\xffi\"}\n"), "line 1: not valid UTF-8"},
		{write("empty.jsonl", ""), "file is empty"},
		{write("blank.jsonl", "\n\n"), "no documents"},
		{parquet("empty.parquet", "select 'a' as id, 'b' as text where false"), "no documents"},
		{write("noid.jsonl", `{"text": "x"}`+"\n"), `line 1: no string or number "id"`},
		{write("garbage.parquet", "this is not parquet"), "not a readable Parquet file"},
		{write("notjson.jsonl", "{oops\n"), "line 1: not a JSON object"},
	} {
		r := spade(t, env, "", "corpus", "import", "--name", "c1", good, tc.file)
		msg, ok := usageMessage(r.stderr)
		if r.code != 2 || !ok || !strings.Contains(msg, tc.file+": ") || !strings.Contains(msg, tc.want) {
			t.Errorf("import %s: exit %d, stderr %q; want exit 2 and one line naming the file and %q", filepath.Base(tc.file), r.code, msg, tc.want)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(lakeDir, "corpora")); len(entries) != 0 {
		t.Fatal("a refused import committed something")
	}
	if out := must(t, env, "lake", "ls"); strings.Contains(out, "c1") {
		t.Fatalf("lake ls lists a corpus after refused imports: %s", out)
	}
}

func TestCorpusImportDedup(t *testing.T) {
	env := localEnv(t)
	out := must(t, env, "corpus", "import", "--name", "docs", repoFile("testdata/corpus/corpus.parquet"), repoFile("testdata/corpus/corpus.jsonl"))
	if !strings.Contains(out, "320 imported, 320 skipped as duplicates, 320 documents in total") {
		t.Fatalf("first import said %q", out)
	}
	extra := filepath.Join(t.TempDir(), "extra.jsonl")
	os.WriteFile(extra, []byte(`{"id": "math-0000", "text": "dup"}`+"\n"+`{"id": 12345678, "text": "new", "domain": "math"}`+"\n"), 0o644)
	out = must(t, env, "corpus", "import", "--name", "docs", extra)
	if !strings.Contains(out, "1 imported, 1 skipped as duplicates, 321 documents in total") {
		t.Fatalf("second import said %q", out)
	}
	got := must(t, env, "query", "--format", "csv", "select doc_id, text from corpus where doc_id in ('12345678', 'math-0000') order by doc_id")
	if !strings.Contains(got, "12345678,new") || strings.Contains(got, "dup") {
		t.Fatalf("corpus after dedup: %q", got)
	}
}

// seedRuns writes turns partitions into two runs of the lake at uri.
func seedRuns(t *testing.T, env []string, uri string) {
	t.Helper()
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		t.Setenv(k, v)
	}
	ctx := context.Background()
	lk, err := lake.Open(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	for r, run := range []string{"r1", "r2"} {
		must(t, env, "--run", run, "init", "--set", "sample.corpus=docs")
		for step := int64(0); step < 2; step++ {
			rows := make([]schemas.TurnRow, 10*(r+1))
			for i := range rows {
				rows[i] = schemas.TurnRow{Step: step, EpisodeID: fmt.Sprintf("e%d", i/5), EnvID: "env", Turn: int32(i % 5),
					Reward: float64(i%4) / 4, Info: "{}", Observation: "o", Action: "a"}
			}
			if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: run, Table: "turns", Step: step}, rows, lake.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestQuery(t *testing.T) {
	env := localEnv(t)
	seedRuns(t, env, strings.TrimPrefix(env[0], "SPADE_LAKE="))
	sum := "select run, count(*) as n, sum(reward) as total from turns group by run order by run"
	// One run, several runs (unioned with a run column), and every run when none is named.
	if out := must(t, env, "--run", "r1", "query", "--format", "csv", sum); out != "run,n,total\nr1,20,6.5\n" {
		t.Errorf("one run: %q", out)
	}
	both := "run,n,total\nr1,20,6.5\nr2,40,15\n"
	if out := must(t, env, "--run", "r1", "--run", "r2", "query", "--format", "csv", sum); out != both {
		t.Errorf("two runs: %q", out)
	}
	if out := must(t, env, "query", "--format", "csv", sum); out != both {
		t.Errorf("no --run: %q", out)
	}
	// SQL from -f and from stdin.
	f := filepath.Join(t.TempDir(), "q.sql")
	os.WriteFile(f, []byte(sum+";\n"), 0o644)
	if out := must(t, env, "--run", "r1", "--run", "r2", "query", "--format", "csv", "-f", f); out != both {
		t.Errorf("-f: %q", out)
	}
	if r := spade(t, env, sum, "--run", "r1", "--run", "r2", "query", "--format", "csv"); r.code != 0 || r.stdout != both {
		t.Errorf("stdin: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	// Formats.
	table := must(t, env, "--run", "r2", "query", sum)
	if fields := strings.Fields(table); !reflect.DeepEqual(fields, []string{"run", "n", "total", "r2", "40", "15"}) {
		t.Errorf("table format: %q", table)
	}
	var objs []map[string]any
	if err := json.Unmarshal([]byte(must(t, env, "query", "--format", "json", sum)), &objs); err != nil || len(objs) != 2 ||
		objs[1]["run"] != "r2" || objs[1]["n"] != 40.0 || objs[1]["total"] != 15.0 {
		t.Errorf("json format: %v, %v", objs, err)
	}
	outDir := t.TempDir()
	csvOut := filepath.Join(outDir, "out.csv")
	if out := must(t, env, "query", "--format", "csv", "--out", csvOut, sum); out != "" {
		t.Errorf("--out also wrote to stdout: %q", out)
	}
	if recs, err := csv.NewReader(strings.NewReader(readFile(t, csvOut))).ReadAll(); err != nil || len(recs) != 3 {
		t.Errorf("--out csv: %v %v", recs, err)
	}
	pq := filepath.Join(outDir, "out.parquet")
	must(t, env, "query", "--format", "parquet", "--out", pq, sum)
	if out := must(t, env, "query", "--format", "csv", fmt.Sprintf("select * from read_parquet('%s') order by run", pq)); out != both {
		t.Errorf("--format parquet round trip: %q", out)
	}
	// Usage errors.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--format", "xml", "select 1"}, "--format must be"},
		{[]string{"query", "--format", "parquet", "select 1"}, "needs --out"},
		{[]string{"--run", "nope", "query", "select 1"}, `no run "nope" in `},
		{[]string{"query", "select * from no_such_table"}, "no_such_table"},
		{[]string{"query"}, "no SQL given"},
	} {
		if r := spade(t, env, "", tc.args...); r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("spade %s: exit %d, %q; want exit 2 naming %q", strings.Join(tc.args, " "), r.code, r.stderr, tc.want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestLakeLs(t *testing.T) {
	env := localEnv(t)
	seedRuns(t, env, strings.TrimPrefix(env[0], "SPADE_LAKE="))
	must(t, env, "corpus", "import", "--name", "docs", repoFile("testdata/corpus/corpus.jsonl"))
	// A benchmark lives under corpora/ beside the corpora, and is listed as a benchmark, not a corpus.
	must(t, env, "bench", "import", "--name", "aime", "--kind", "math", repoFile("testdata/bench/math.jsonl"))
	must(t, env, "--run", "r3", "init")
	out := must(t, env, "lake", "ls")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	want := [][]string{
		{"RUN", "TABLE", "STEP", "FILES", "ROWS", "BYTES"},
		{"r1", "turns", "0", "1", "10"}, {"r1", "turns", "1", "1", "10"},
		{"r2", "turns", "0", "1", "20"}, {"r2", "turns", "1", "1", "20"},
		{"r3", "-", "-", "0", "0", "0"},
		{"(corpus", "docs)", "corpus", "0", "1", "320"},
		{"(bench", "aime)", "bench_items", "0", "1", "12"},
	}
	if len(lines) != len(want) {
		t.Fatalf("lake ls:\n%s", out)
	}
	for i, w := range want {
		if f := strings.Fields(lines[i]); len(f) < len(w) || !reflect.DeepEqual(f[:len(w)], w) {
			t.Errorf("lake ls line %d = %q, want it to start with %q", i, lines[i], w)
		}
	}
	// --summary: one line per run, then the corpus and the benchmark, each named for what it is.
	sum := strings.Split(strings.TrimSpace(must(t, env, "lake", "ls", "--summary")), "\n")
	wantSum := [][]string{
		{"RUN", "TABLES", "PARTITIONS", "STEPS", "FILES", "ROWS", "BYTES"},
		{"r1", "1", "2", "0-1", "2", "20"},
		{"r2", "1", "2", "0-1", "2", "40"},
		{"r3", "0", "0", "-", "0", "0", "0"},
		{"(corpus", "docs)", "1", "1", "-", "1", "320"},
		{"(bench", "aime)", "1", "1", "-", "1", "12"},
	}
	if len(sum) != len(wantSum) {
		t.Fatalf("lake ls --summary:\n%s", strings.Join(sum, "\n"))
	}
	for i, w := range wantSum {
		if f := strings.Fields(sum[i]); len(f) < len(w) || !reflect.DeepEqual(f[:len(w)], w) {
			t.Errorf("lake ls --summary line %d = %q, want it to start with %q", i, sum[i], w)
		}
	}
	if only := must(t, env, "--run", "r2", "lake", "ls"); strings.Contains(only, "r1") || !strings.Contains(only, "r2") {
		t.Errorf("lake ls --run r2:\n%s", only)
	}
	// An orphan (a killed writer's part, older than the grace period) is flagged under the table.
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	orphan := filepath.Join(lakeDir, "runs", "r1", "turns", "step=0", "part-orphan.parquet")
	if err := os.WriteFile(orphan, []byte("not committed"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(orphan, old, old); err != nil {
		t.Fatal(err)
	}
	if out := must(t, env, "lake", "ls"); !strings.Contains(out, "run r1: 1 orphaned objects") || !strings.Contains(out, "lake vacuum") || strings.Contains(out, "run r2:") {
		t.Errorf("lake ls with an orphan in r1:\n%s", out)
	}
	// A lake path that does not exist is a usage error, not an empty listing.
	missing := append([]string{"SPADE_LAKE=" + filepath.Join(t.TempDir(), "nope")}, env[1:]...)
	if r := spade(t, missing, "", "lake", "ls"); r.code != 2 || !strings.Contains(r.stderr, "no lake at") {
		t.Errorf("lake ls on a missing lake: exit %d, %q", r.code, r.stderr)
	}
}

// TestLocalAndS3GiveTheSameAnswers runs the researcher's path (init, corpus import, query, lake ls) on a
// local lake and on an S3 lake and compares every answer.
func TestLocalAndS3GiveTheSameAnswers(t *testing.T) {
	_, bucket := s3test.Start(t)
	answers := func(env []string) []string {
		var out []string
		out = append(out, must(t, env, "--run", "r1", "init", "--preset", "qwen3-8b-games", "--set", "sample.corpus=docs"))
		out = append(out, must(t, env, "corpus", "import", "--name", "docs", repoFile("testdata/corpus/corpus.parquet"), repoFile("testdata/corpus/corpus.jsonl")))
		for _, q := range []string{
			"select domain, count(*) as docs, sum(length(text)) as chars, min(doc_id), max(doc_id) from corpus group by all order by domain",
			"select * from corpus order by doc_id limit 5",
			"select column_name, column_type from (describe corpus)",
			"select count(*) from episodes",
		} {
			for _, format := range []string{"table", "json"} {
				out = append(out, must(t, env, "--run", "r1", "query", "--format", format, q))
			}
		}
		ls := must(t, env, "lake", "ls")
		return append(out, ls)
	}
	local := answers(localEnv(t))
	s3 := answers([]string{"SPADE_LAKE=s3://" + bucket + "/spade", "SPADE_CACHE=" + t.TempDir(), "SPADE_RUN="})
	for i := range local {
		l := strings.ReplaceAll(local[i], "created run r1 in ", "")
		s := strings.ReplaceAll(s3[i], "created run r1 in ", "")
		if i == 0 {
			continue // names the lake
		}
		if l != s {
			t.Errorf("answer %d differs:\nlocal:\n%s\ns3:\n%s", i, l, s)
		}
	}
	if !strings.Contains(local[2], "code") || !strings.Contains(local[2], "106") {
		t.Errorf("corpus by domain: %s", local[2])
	}
}

// Every stage command goes through stage.Execute: a stage started before its input names the command
// to run first (exit 1), a stage at a step where it is not due, a bad shard and --force on a shard are
// usage errors (exit 2), and none of them writes anything.
func TestStageCommandsCheckTheRequest(t *testing.T) {
	env := localEnv(t)
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	must(t, env, "--run", "c1", "init", "--preset", "qwen3-4b-games")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		// The command to run first names the lake and the run, so it works as written anywhere.
		{[]string{"gate", "--step", "0", "--no-regenerate"}, 1, "run `spade --lake " + lakeDir + " --run c1 generate --step 0` first"},
		{[]string{"rollout", "--step", "2"}, 1, "run `spade --lake " + lakeDir + " --run c1 gate --step 0` first"},
		{[]string{"regret", "--step", "3"}, 1, "run `spade --lake " + lakeDir + " --run c1 rollout --step 3` first"},
		{[]string{"grpo", "--step", "3"}, 1, "run `spade --lake " + lakeDir + " --run c1 rollout --step 3` first"},
		{[]string{"sample", "--step", "5"}, 2, "not a pool refresh step"},
		{[]string{"regret", "--step", "-1"}, 2, "--step must be >= 0"},
		{[]string{"regret", "--step", "1", "--shard", "3", "--shards", "2"}, 2, "--shard must be in 0..1"},
		{[]string{"regret", "--step", "1", "--shards", "2", "--force"}, 2, "needs --shards 1"},
	} {
		r := spade(t, env, "", append([]string{"--run", "c1"}, c.args...)...)
		msg, ok := usageMessage(r.stderr)
		if c.code != 2 {
			msg, ok = r.stderr, true
		}
		if r.code != c.code || !ok || !strings.Contains(msg, c.want) {
			t.Errorf("spade %s: exit %d, stderr %q; want exit %d and %q on one line (and the usage line for exit 2)", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.want)
		}
	}
	if out := must(t, env, "lake", "ls"); len(strings.Split(strings.TrimSpace(out), "\n")) != 2 || !strings.Contains(out, "c1  ") {
		t.Fatalf("a refused stage wrote a partition:\n%s", out)
	}
}

// isUsageError reports whether stderr is a usage error's two lines (usageMessage).
func isUsageError(stderr string) bool {
	_, ok := usageMessage(stderr)
	return ok
}
