package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// evalBenches are the testdata benchmarks: name, kind, files.
var evalBenches = []struct {
	name, kind string
	files      []string
}{
	{"tmath", "math", []string{"testdata/bench/math.jsonl"}},
	{"tchoice", "choice", []string{"testdata/bench/choice.jsonl"}},
	{"tcode", "code", []string{"testdata/bench/code.jsonl"}},
	{"tcalls", "function_call", []string{"testdata/bench/function_call.jsonl", "testdata/bench/function_call_answers.jsonl"}},
}

// evalScript answers the testdata benchmarks: right (in another form than the reference) or wrong, by
// the request seed's parity, so samples differ and a replay must reproduce which was which.
func evalScript(delay time.Duration) llmtest.Script {
	math := map[string][2]string{
		"marbles": {`\boxed{0.375}`, `\boxed{3/5}`}, "17 * 23": {`\boxed{391}`, `\boxed{381}`},
		"square root of 12": {`\boxed{\sqrt{12}}`, `\boxed{3\sqrt{2}}`}, "2^10": {`\boxed{2}`, `first \boxed{2} then \boxed{4}`},
		"0.125": {`\boxed{\dfrac{1}{8}}`, `\boxed{8}`}, "diagonal": {`\boxed{10}`, `\boxed{5\sqrt{2}}`},
		"3x - 7": {`x = \boxed{6}`, `\boxed{6.5}`}, "hexagon": {`\boxed{720^\circ}`, `\boxed{360}`},
		"(x+2)^2": {`\boxed{(x+2)(x+2)}`, `\boxed{x^2+4}`}, "divisors": {`\boxed{9}`, `\boxed{8}`},
		"half of pi": {`\boxed{\pi/2}`, `\boxed{1.57}`}, "1000 + 234": {`\boxed{1,234}`, `\boxed{1243}`},
	}
	choice := map[string]string{"photosynthesis": "carbon dioxide", "closest to the Sun": "Mercury", "sodium": "Na",
		"negative charge": "electron", "unit of force": "newton", "pumps blood": "heart"}
	code := map[string][2]string{
		"their sum":     {"a, b = map(int, input().split())\nprint(a + b)", "a, b = map(int, input().split())\nprint(abs(a) + b)"},
		"reversed":      {"print(input()[::-1])", "while True:\n    pass"},
		"largest":       {"input()\nprint(max(map(int, input().split())))", "import sys\nwhile True:\n    sys.stdout.write('x' * 65536)"},
		"added to each": {"class Solution:\n    def shift(self, xs, k):\n        return [x + k for x in xs]", "class Solution:\n    def shift(self, xs, k):\n        return xs"},
	}
	calls := map[string][2][]llm.ToolCall{
		"weather in Paris":  {{tool("get_weather", `{"unit":"celsius","city":"Paris"}`)}, {tool("get_weather", `{"city":"London"}`)}},
		"kilometres":        {{tool("convert_length", `{"to_unit":"miles","value":5,"from_unit":"km"}`)}, {tool("convert_mass", `{"value":5,"from_unit":"km","to_unit":"miles"}`)}},
		"Tokyo and in Lima": {{tool("get_time", `{"city":"Lima"}`), tool("get_time", `{"city":"Tokyo"}`)}, {tool("get_time", `{"city":"Tokyo"}`)}},
		"Luigi's":           {{tool("get_weather", `{"city":"Rome"}`), tool("book_table", `{"people":2,"restaurant":"Luigi's"}`)}, {tool("book_table", `{"people":"two","restaurant":"Luigi's"}`), tool("get_weather", `{"city":"Rome"}`)}},
	}
	return func(req *llm.ChatRequestBody) llmtest.Reply {
		text := llmtest.PromptText(req)
		pick := int(req.Seed % 2)
		reply := llmtest.Reply{Text: "I do not know.", Delay: delay}
		for k, v := range math {
			if strings.Contains(text, k) {
				reply.Text = "Working it out.\n" + v[pick]
			}
		}
		for k, answer := range choice {
			if strings.Contains(text, k) {
				letter := "A"
				for _, line := range strings.Split(text, "\n") {
					if strings.HasSuffix(line, ") "+answer) {
						letter = line[:1]
					}
				}
				if pick == 1 {
					letter = string(rune('A' + (int(letter[0]-'A')+1)%4))
				}
				reply.Text = "Reasoning.\nAnswer: " + letter
			}
		}
		for k, v := range code {
			if strings.Contains(text, k) {
				reply.Text = "```python\n" + v[pick] + "\n```"
			}
		}
		for k, v := range calls {
			if strings.Contains(text, k) {
				reply.Text, reply.ToolCalls = "", v[pick]
			}
		}
		reply.Text += []string{"\n(right)", "\n(wrong)"}[pick]
		return reply
	}
}

func tool(name, args string) llm.ToolCall {
	return llm.ToolCall{ID: "call_" + name, Type: "function", Function: llm.FunctionCall{Name: name, Arguments: args}}
}

// evalEnv is the environment of the eval CLI tests: a lake, a cache and Debian's python.
func evalEnv(t *testing.T) ([]string, string) {
	dir := t.TempDir()
	py := os.Getenv("SPADE_PYTHON")
	if py == "" {
		py = "/usr/bin/python3"
	}
	return []string{"SPADE_LAKE=" + dir, "SPADE_CACHE=" + t.TempDir(), "SPADE_PYTHON=" + py}, dir
}

func importEvalBenches(t *testing.T, env []string) {
	for _, b := range evalBenches {
		args := []string{"bench", "import", "--name", b.name, "--kind", b.kind}
		for _, f := range b.files {
			args = append(args, repoFile(f))
		}
		must(t, env, args...)
	}
}

func initEvalRun(t *testing.T, env []string, run, baseURL string, chunk int) {
	must(t, env, "--run", run, "init", "--preset", "qwen3-4b-games", "--set", "llm.agent.base_url="+baseURL,
		"--set", "llm.agent.model=agent-model", "--set", fmt.Sprintf("eval.chunk_items=%d", chunk),
		"--set", "sandbox.load_timeout_seconds=120")
}

const evalBenchList = "tmath,tchoice,tcode,tcalls"

// evalRows renders every eval_results and llm_calls row of a run's step (latency zeroed), sorted.
func evalRows(t *testing.T, dir, run string, step int64) (results, calls []string) {
	t.Helper()
	ctx := context.Background()
	lk, err := lake.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := lake.ReadStep[schemas.EvalResultRow](ctx, lk, run, schemas.EvalResultsSpec.Name, step)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		r.LatencyMS = 0
		results = append(results, fmt.Sprintf("%+v", r))
	}
	cs, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, run, schemas.LLMCallsSpec.Name, step)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		c.LatencyMS = 0
		calls = append(calls, fmt.Sprintf("%+v", c))
	}
	sort.Strings(results)
	sort.Strings(calls)
	return results, calls
}

// TestEvalRecordsReplaysAndShards runs `spade eval` on the four testdata benchmarks against the scripted
// server and checks the rows and scores, that a replay writes identical rows, and that two shards write
// what one process does.
func TestEvalRecordsReplaysAndShards(t *testing.T) {
	if testing.Short() {
		t.Skip("records, replays and shards four benchmarks; skipped with -short")
	}
	srv := llmtest.Start(t, evalScript(0), "agent-model")
	srv.KeepRequests(false)
	env, dir := evalEnv(t)
	importEvalBenches(t, env)
	initEvalRun(t, env, "a", srv.URL, 3)
	out := must(t, env, "--run", "a", "eval", "--step", "0", "--bench", evalBenchList, "--samples", "4")
	t.Log(out)
	results, calls := evalRows(t, dir, "a", 0)
	if want := (12 + 6 + 4 + 4) * 4; len(results) != want || len(calls) != want {
		t.Fatalf("%d eval_results and %d llm_calls rows, want %d", len(results), len(calls), want)
	}
	// Every sample scored as the script meant: seed parity 0 is right (in another form), 1 wrong.
	ctx := context.Background()
	lk, _ := lake.Open(ctx, dir)
	rows, _ := lake.ReadStep[schemas.EvalResultRow](ctx, lk, "a", schemas.EvalResultsSpec.Name, 0)
	for _, r := range rows {
		want := 0.0
		if strings.Contains(r.Response, "(right)") {
			want = 1
		}
		if r.Score != want {
			t.Errorf("%s/%s sample %d: score %v (%s; extracted %q), want %v", r.Bench, r.ItemID, r.Sample, r.Score, r.Detail, r.Extracted, want)
		}
		if r.PromptSHA256 == "" || r.Temperature != map[schemas.BenchKind]float64{"math": 1, "choice": 0.7, "code": 0.2, "function_call": 0}[r.Kind] {
			t.Errorf("%s/%s: prompt hash %q, temperature %v", r.Bench, r.ItemID, r.PromptSHA256, r.Temperature)
		}
	}
	// Again: every chunk is committed, nothing is asked.
	before := srv.Count()
	must(t, env, "--run", "a", "eval", "--step", "0", "--bench", evalBenchList, "--samples", "4")
	if srv.Count() != before {
		t.Errorf("a second eval asked %d more calls", srv.Count()-before)
	}
	// Replay: a run answering from a's calls writes the same rows.
	initEvalRun(t, env, "replayed", llm.ReplayPrefix+"a", 3)
	must(t, env, "--run", "replayed", "eval", "--step", "0", "--bench", evalBenchList, "--samples", "4")
	gotResults, gotCalls := evalRows(t, dir, "replayed", 0)
	compareLines(t, "replay eval_results", results, gotResults)
	compareLines(t, "replay llm_calls", calls, gotCalls)
	// Two shards (other chunk size too) equal one process.
	initEvalRun(t, env, "sharded", srv.URL, 2)
	for i := 0; i < 2; i++ {
		must(t, env, "--run", "sharded", "eval", "--step", "0", "--bench", evalBenchList, "--samples", "4", "--shard", fmt.Sprint(i), "--shards", "2")
	}
	gotResults, gotCalls = evalRows(t, dir, "sharded", 0)
	compareLines(t, "sharded eval_results", results, gotResults)
	compareLines(t, "sharded llm_calls", calls, gotCalls)
}

func compareLines(t *testing.T, what string, want, got []string) {
	t.Helper()
	if len(want) != len(got) {
		t.Errorf("%s: %d rows, want %d", what, len(got), len(want))
		return
	}
	for i := range want {
		if want[i] != got[i] {
			t.Errorf("%s: row differs:\n got %.400s\nwant %.400s", what, got[i], want[i])
			return
		}
	}
}

// TestEvalResumesAfterKill kills `spade eval` (SIGKILL) after some chunks are committed, resumes it and
// checks the rows equal an uninterrupted evaluation's, with no duplicates.
func TestEvalResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and resumes an evaluation; skipped with -short")
	}
	srv := llmtest.Start(t, evalScript(40*time.Millisecond), "agent-model")
	srv.KeepRequests(false)
	env, dir := evalEnv(t)
	importEvalBenches(t, env)
	initEvalRun(t, env, "ref", srv.URL, 1)
	args := []string{"eval", "--step", "0", "--bench", "tmath,tchoice", "--samples", "2"}
	must(t, env, append([]string{"--run", "ref"}, args...)...)
	want, _ := evalRows(t, dir, "ref", 0)

	initEvalRun(t, env, "killed", srv.URL, 1)
	cmd := spadeCmd(t, append([]string{"--run", "killed"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if evalChunksCommitted(dir, "killed") >= 3 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	m := evalChunksCommitted(dir, "killed")
	if m < 3 || m >= 18 {
		t.Fatalf("killed with %d of 18 chunks committed; want a kill in the middle", m)
	}
	before := srv.Count()
	must(t, env, append([]string{"--run", "killed"}, args...)...)
	asked := srv.Count() - before
	if asked > (18-m)*2 {
		t.Errorf("the resume asked %d calls for %d uncommitted chunks of 2 samples", asked, 18-m)
	}
	got, _ := evalRows(t, dir, "killed", 0)
	compareLines(t, "resumed eval_results", want, got)
}

// TestBenchImportBadInput: a bad file is one line on stderr, exit 2, and nothing committed.
func TestBenchImportBadInput(t *testing.T) {
	env, dir := evalEnv(t)
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(bad, []byte(`{"id": "x1", "problem": "1+1?"}`+"\n"), 0o644)
	cases := [][]string{
		{"--name", "b", "--kind", "math", repoFile("testdata/bench/math.jsonl"), bad},
		{"--name", "b", "--kind", "choice", repoFile("testdata/bench/math.jsonl")},
		{"--name", "b", "--kind", "function_call", repoFile("testdata/bench/function_call.jsonl")},
		{"--name", "b", "--kind", "poem", repoFile("testdata/bench/math.jsonl")},
		{"--name", "b", "--kind", "math", filepath.Join(t.TempDir(), "missing.jsonl")},
	}
	for _, c := range cases {
		r := spade(t, env, "", append([]string{"bench", "import"}, c...)...)
		if r.code != 2 || !isUsageError(r.stderr) {
			t.Errorf("bench import %v: exit %d, stderr %q; want 2, the error and the usage line", c, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "corpora")); err == nil {
		t.Error("a refused import committed something")
	}
	r := spade(t, env, "", "--run", "x", "init", "--preset", "qwen3-4b-games")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	if r := spade(t, env, "", "--run", "x", "eval", "--step", "0", "--bench", "nope"); r.code != 2 {
		t.Errorf("eval of an unknown bench: exit %d, %s", r.code, r.stderr)
	}
}

// evalChunksCommitted counts the eval chunks of a run's step 0 that are committed: each chunk commits in a
// transaction of its own, whose record is runs/<run>/_commits/step=0/<chunk's fragment>/g*.json.
func evalChunksCommitted(dir, run string) int {
	records, _ := filepath.Glob(filepath.Join(dir, "runs", run, "_commits", "step=0", "*", "g*.json"))
	chunks := map[string]bool{}
	for _, r := range records {
		if name := filepath.Base(filepath.Dir(r)); name != "eval" {
			chunks[name] = true
		}
	}
	return len(chunks)
}
