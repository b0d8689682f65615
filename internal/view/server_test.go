package view

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/corpus"
	"github.com/spadekit/spade/internal/duck"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/synth"
)

// testStages mirrors the stages' marker tables (cmd/spade's TestViewStageMarkers pins the real list).
var testStages = []StageMarker{{"sample", "samples"}, {"generate", "candidates"}, {"pool/gate", "envs"},
	{"rollout", "episodes"}, {"regret", "designer_rewards"}, {"grpo", "train_metrics"}}

// demoLake returns a lake holding the run the demo replays (testdata/sample-run, run "sample": the
// tables `make demo` writes again, through the real sandbox, from the same recorded calls) and the
// testdata corpus under the name the run reads.
func demoLake(t *testing.T) (*lake.Lake, string) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "runs"), os.DirFS(filepath.Join("..", "..", "testdata", "sample-run", "runs"))); err != nil {
		t.Fatal(err)
	}
	lk := laketest.Open(t, dir)
	files := []string{filepath.Join("..", "..", "testdata", "corpus", "corpus.parquet"), filepath.Join("..", "..", "testdata", "corpus", "corpus.jsonl")}
	if _, err := corpus.Import(ctx, lk, "default", files); err != nil {
		t.Fatal(err)
	}
	return lk, "sample"
}

// synthLake returns a lake with a synthetic run "s" of the given number of steps.
func synthLake(t testing.TB, steps int) (*lake.Lake, string) {
	t.Helper()
	ctx := context.Background()
	lk := laketest.New(t)
	o := synth.Small()
	o.Steps = steps
	if err := synth.Write(ctx, lk, "s", o); err != nil {
		t.Fatal(err)
	}
	return lk, "s"
}

func startServer(t testing.TB, lk *lake.Lake, opts Options) *httptest.Server {
	t.Helper()
	if opts.Stages == nil {
		opts.Stages = testStages
	}
	srv := New(lk, opts)
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	return ts
}

// get fetches a path and decodes its JSON body, checking the status code.
func get(t *testing.T, ts *httptest.Server, path string, want int) map[string]any {
	t.Helper()
	res, err := http.Get(ts.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, res, path, want)
}

func decode(t *testing.T, res *http.Response, what string, want int) map[string]any {
	t.Helper()
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != want {
		t.Fatalf("%s: status %d, want %d: %s", what, res.StatusCode, want, body)
	}
	var out map[string]any
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatalf("%s: not JSON: %v: %.300s", what, err, body)
	}
	return out
}

func postQuery(t *testing.T, ts *httptest.Server, runs []string, sql string, want int) map[string]any {
	t.Helper()
	body, _ := json.Marshal(consoleRequest{Runs: runs, SQL: sql})
	res, err := http.Post(ts.URL+"/api/query", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, res, sql, want)
}

// truth runs SQL in a plain session of the lake (not the server's) and returns the first row.
func truth(t testing.TB, lk *lake.Lake, run, sql string) []any {
	t.Helper()
	s, err := duck.OpenRuns(context.Background(), lk, run)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ds, err := query(context.Background(), s.DB, sql, 1)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	if len(ds.Rows) == 0 {
		t.Fatalf("%s: no row", sql)
	}
	return ds.Rows[0]
}

// dataset checks that v is a Dataset as JSON (sql, columns, rows) with the given columns and returns
// its rows.
func dataset(t *testing.T, v any, what string, columns ...string) []any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s: not an object: %v", what, v)
	}
	if sql, _ := m["sql"].(string); sql == "" {
		t.Errorf("%s: no sql", what)
	}
	cols, _ := m["columns"].([]any)
	have := map[string]bool{}
	for _, c := range cols {
		have[c.(string)] = true
	}
	for _, c := range columns {
		if !have[c] {
			t.Errorf("%s: no column %q in %v", what, c, cols)
		}
	}
	rows, ok := m["rows"].([]any)
	if !ok {
		t.Fatalf("%s: rows is not a list", what)
	}
	return rows
}

// checkEndpoints walks every endpoint of a run the way the pages do and checks shapes and values.
func checkEndpoints(t *testing.T, lk *lake.Lake, run string) {
	ts := startServer(t, lk, Options{})
	runs := get(t, ts, "/api/runs", 200)["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	r0 := runs[0].(map[string]any)
	if r0["run"] != run || r0["preset"] == "" || len(r0["stages"].([]any)) != len(testStages) {
		t.Errorf("run: %v", r0)
	}
	dataset(t, r0["dashboard"], "dashboard", "window_start", "band_share", "solve_rate_nohint", "solve_rate_hint", "regret", "vendi_per_n", "acceptance", "agent_tokens")

	tl := get(t, ts, "/api/runs/"+run+"/timeline", 200)
	series := tl["series"].(map[string]any)
	for name, cols := range map[string][]string{"band": {"window_start", "band_share"}, "solve_rates": {"step", "solve_rate_nohint", "solve_rate_hint"},
		"regret": {"step", "regret"}, "vendi": {"window_start", "vendi_per_n"}, "acceptance": {"step", "acceptance"}, "cost": {"step", "agent_tokens"}} {
		dataset(t, series[name], "timeline "+name, cols...)
	}
	if rows := dataset(t, series["solve_rates"], "solve_rates"); len(rows) == 0 {
		t.Error("timeline: no solve rates")
	}
	trained := truth(t, lk, run, "select count(distinct step) from train_metrics where role = 'agent'")[0].(int64)
	if rows := dataset(t, series["left_out"], "left_out", "step", "broken_prefix", "missing_tokens", "missing_call"); int64(len(rows)) != trained {
		t.Errorf("timeline left_out: %d rows, want one per trained step (%d)", len(rows), trained)
	}

	step := truth(t, lk, run, "select max(step) from episodes")[0].(int64)
	pool := get(t, ts, "/api/runs/"+run+"/steps/"+itoa(step), 200)
	data := pool["data"].(map[string]any)
	cards := dataset(t, data["envs"], "pool envs", "env_id", "skill", "class_name", "doc_id", "solve_rate_nohint", "solve_rate_hint",
		"regret", "anchor", "designer_reward", "memory_label", "class_name_envs")
	if len(cards) == 0 {
		t.Fatal("pool: no envs")
	}
	dataset(t, data["gate"], "gate", "slot", "attempt", "check", "passed", "skipped", "error")
	dataset(t, data["candidates"], "candidates", "slot", "attempt", "env_id", "parse_error")
	wantEnvs := truth(t, lk, run, "select count(*) from envs where step = "+itoa(int64(pool["pool_step"].(float64))))[0].(int64)
	if int64(len(cards)) != wantEnvs {
		t.Errorf("pool: %d cards, the pool has %d envs", len(cards), wantEnvs)
	}

	envID := cards[0].([]any)[1].(string)
	env := get(t, ts, "/api/runs/"+run+"/envs/"+url.PathEscape(envID), 200)
	want := truth(t, lk, run, "select code, hint from envs where env_id = "+lit(envID))
	e := env["env"].(map[string]any)
	if e["code"] != want[0] || e["hint"] != want[1] {
		t.Errorf("env: code or hint differ from DuckDB's")
	}
	edata := env["data"].(map[string]any)
	episodes := dataset(t, edata["episodes"], "env episodes", "episode_id", "hinted", "seed", "return", "success", "ended_by")
	dataset(t, edata["designer_call"], "designer call", "request", "response_text")
	dataset(t, edata["candidate"], "candidate", "raw_response")
	if len(episodes) == 0 {
		t.Fatal("env: no episodes")
	}

	epID := episodes[0].([]any)[0].(string)
	ep := get(t, ts, "/api/runs/"+run+"/episodes/"+url.PathEscape(epID), 200)
	turns := dataset(t, ep["data"].(map[string]any)["turns"], "turns", "turn", "observation", "answer", "action", "reward", "done",
		"prompt_tokens", "completion_tokens", "latency_ms")
	firstObs := truth(t, lk, run, "select observation from turns where episode_id = "+lit(epID)+" order by turn limit 1")[0]
	if len(turns) == 0 || turns[0].([]any)[1] != firstObs {
		t.Errorf("episode: first observation differs from DuckDB's")
	}
	answer := truth(t, lk, run, "select c.response_text from turns t join llm_calls c using (call_id) where t.episode_id = "+lit(epID)+" order by t.turn limit 1")[0]
	if turns[0].([]any)[2] != answer {
		t.Errorf("episode: the Agent's answer differs from llm_calls: %v", turns[0].([]any)[2])
	}

	q := postQuery(t, ts, []string{run}, "select count(*) as n from episodes", 200)
	if n := q["rows"].([]any)[0].([]any)[0].(float64); int64(n) != truth(t, lk, run, "select count(*) from episodes")[0].(int64) {
		t.Errorf("console count %v", n)
	}

	for _, path := range []string{"/api/runs/nope/timeline", "/api/runs/" + run + "/envs/nope", "/api/runs/" + run + "/episodes/nope",
		"/api/runs/" + run + "/steps/x", "/api/runs/" + run + "/steps/99999", "/api/nothing"} {
		if m := get(t, ts, path, 404); m["error"] == "" {
			t.Errorf("%s: no error message", path)
		}
	}
	for _, page := range []string{"/", "/runs/" + run, "/runs/" + run + "/steps/0", "/console", "/assets/app.js", "/assets/app.css"} {
		res, err := http.Get(ts.URL + page)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || !strings.Contains(res.Header.Get("Content-Security-Policy"), "default-src 'self'") {
			t.Errorf("%s: %d, CSP %q", page, res.StatusCode, res.Header.Get("Content-Security-Policy"))
		}
	}
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

func TestEndpointsDemoRun(t *testing.T) {
	lk, run := demoLake(t)
	checkEndpoints(t, lk, run)
}

func TestEndpointsSynthRun(t *testing.T) {
	lk, run := synthLake(t, 16)
	checkEndpoints(t, lk, run)
}

// TestSessionFollowsTheLake: a server answers from its session (its listing, its memoized results) until
// Refresh has passed, then lists the run again and, when its files changed, reopens the session: a
// dropped step leaves the stages-done grid and the solve rates.
func TestSessionFollowsTheLake(t *testing.T) {
	ctx := context.Background()
	lk, run := synthLake(t, 4)
	srv := New(lk, Options{Stages: testStages, Refresh: time.Hour})
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { ts.Close(); srv.Close() })
	timeline := func() (samples, episodeSteps int) {
		body := get(t, ts, "/api/runs/"+run+"/timeline", http.StatusOK)
		for _, st := range body["stages"].([]any) {
			if st := st.(map[string]any); st["table"] == "samples" {
				samples = len(st["steps"].([]any))
			}
		}
		series := body["series"].(map[string]any)
		return samples, len(series["solve_rates"].(map[string]any)["rows"].([]any))
	}
	if s, e := timeline(); s != 1 || e != 4 {
		t.Fatalf("before: %d sample steps, %d solve-rate steps; want 1 and 4", s, e)
	}
	for _, table := range []string{"samples", "episodes"} {
		if err := lk.Drop(ctx, lake.PartitionKey{Run: run, Table: table, Step: 0}); err != nil {
			t.Fatal(err)
		}
	}
	if s, e := timeline(); s != 1 || e != 4 {
		t.Errorf("within Refresh: %d sample steps, %d solve-rate steps; want the session's 1 and 4", s, e)
	}
	srv.mu.Lock() // as if Refresh had passed
	for _, c := range srv.sessions {
		c.checked = time.Time{}
	}
	srv.mu.Unlock()
	if s, e := timeline(); s != 0 || e != 3 {
		t.Errorf("after Refresh: %d sample steps, %d solve-rate steps; want 0 and 3", s, e)
	}
}

// TestConsoleIsReadOnly: the console runs SELECTs, returns SQL errors as messages, and refuses every way
// of writing or reaching outside the run's files.
func TestConsoleIsReadOnly(t *testing.T) {
	lk, run := demoLake(t)
	ts := startServer(t, lk, Options{})
	runs := []string{run}

	for _, ok := range []string{"select 1 as one;", "with a as (select 2 as x) select * from a", "from envs select env_id limit 1",
		"describe episodes", "show tables", "select * from dashboard", "select count(*) from corpus"} {
		postQuery(t, ts, runs, ok, 200)
	}
	if m := postQuery(t, ts, runs, "select no_such_column from episodes", 400); !strings.Contains(m["error"].(string), "no_such_column") {
		t.Errorf("SQL error message: %v", m["error"])
	}
	postQuery(t, ts, runs, "selec 1", 400)

	target := filepath.Join(t.TempDir(), "out")
	for _, write := range []string{
		"copy (select 1) to " + lit(target+".csv"),
		"attach " + lit(target+".db"),
		"install httpfs", "load httpfs",
		"create table t as select 1", "insert into envs select * from envs", "drop view episodes",
		"select 1; copy (select 1) to " + lit(target+".csv"),
		"set enable_external_access = true", "pragma version", "export database " + lit(target),
		"call pragma_version()",
	} {
		m := postQuery(t, ts, runs, write, 403)
		if msg := m["error"].(string); !strings.Contains(msg, "only a single SELECT") || strings.Contains(msg, "serialized") {
			t.Errorf("%s: %v", write, m["error"])
		}
	}
	for _, outside := range []string{"select * from read_csv('/etc/passwd')", "select getenv('HOME')",
		"select * from query('copy (select 1) to " + strings.ReplaceAll(lit(target+".csv"), "'", "''") + "')",
		"select * from read_text(" + lit(filepath.Join("..", "..", "go.mod")) + ")"} {
		postQuery(t, ts, runs, outside, 400)
	}
	if matches, _ := filepath.Glob(target + "*"); len(matches) > 0 {
		t.Errorf("the console wrote %v", matches)
	}

	res, err := http.Get(ts.URL + "/api/query.csv?" + url.Values{"run": {run}, "sql": {"select step, count(*) as n from episodes group by step order by step"}}.Encode())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.HasPrefix(string(body), "step,n\n0,") || !strings.Contains(res.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("csv: %d %q", res.StatusCode, body)
	}
	res, _ = http.Get(ts.URL + "/api/query.csv?" + url.Values{"run": {run}, "sql": {"copy (select 1) to 'x.csv'"}}.Encode())
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("csv of a COPY: %d", res.StatusCode)
	}
}

// TestToken: a non-loopback address needs a token; with one, every request must carry it; without one,
// only loopback Host headers are served.
func TestToken(t *testing.T) {
	for addr, token := range map[string]string{"127.0.0.1:8600": "", "[::1]:8600": "", "localhost:0": "", "0.0.0.0:8600": "s3cret", "192.168.1.4:80": "x"} {
		if err := CheckAddr(addr, token); err != nil {
			t.Errorf("CheckAddr(%s, %q): %v", addr, token, err)
		}
	}
	for _, addr := range []string{"0.0.0.0:8600", ":8600", "192.168.1.4:80", "example.org:80"} {
		if err := CheckAddr(addr, ""); err == nil {
			t.Errorf("CheckAddr(%s) without a token passed", addr)
		}
	}

	lk, _ := synthLake(t, 4)
	ts := startServer(t, lk, Options{Token: "s3cret"})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	do := func(path string, mod func(*http.Request)) *http.Response {
		req, _ := http.NewRequest("GET", ts.URL+path, nil)
		if mod != nil {
			mod(req)
		}
		res, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	for _, path := range []string{"/", "/api/runs", "/assets/app.js", "/api/query.csv?sql=select+1", "/runs/s?token=wrong"} {
		if res := do(path, nil); res.StatusCode != 401 {
			t.Errorf("%s without the token: %d", path, res.StatusCode)
		}
	}
	if res := do("/api/runs", func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") }); res.StatusCode != 200 {
		t.Errorf("bearer: %d", res.StatusCode)
	}
	res := do("/runs/s?token=s3cret", nil)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/runs/s" || len(res.Cookies()) != 1 {
		t.Fatalf("?token=: %d %q %v", res.StatusCode, res.Header.Get("Location"), res.Cookies())
	}
	cookie := res.Cookies()[0]
	if !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Errorf("cookie: %+v", cookie)
	}
	if res := do("/api/runs", func(r *http.Request) { r.AddCookie(cookie) }); res.StatusCode != 200 {
		t.Errorf("cookie: %d", res.StatusCode)
	}

	open := startServer(t, lk, Options{})
	req, _ := http.NewRequest("GET", open.URL+"/api/runs", nil)
	req.Host = "attacker.example:8600" // DNS rebinding: a loopback server named by another host
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 403 {
		t.Errorf("non-loopback Host without a token: %d", res.StatusCode)
	}
}
