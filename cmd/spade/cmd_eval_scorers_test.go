package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// hostileReplies are the benchmark answers of testdata/hostile/answers that forge a score, keyed by
// the item whose prompt they answer and given in turn (internal/bench's hostile tests
// show each reaching its goal against the scorers as they were).
var hostileReplies = map[string][]string{
	"square root of 12": {"math_equal_anything.txt", "math_forge_verdict.txt"},
	"their sum":         {"code_daemon_serves.py", "code_daemon_asks.py", "code_read_expected.py"},
}

// TestEvalHostileAnswersContained imports the testdata math and code benchmarks and evaluates them with
// an Agent that answers two items with the hostile answers and the rest honestly (right or wrong by the
// seed, as evalScript): every forged answer scores 0, every honest one the score it deserves, and the
// one hostile answer that is also correct (it leaves a daemon behind) scores 1.
func TestEvalHostileAnswersContained(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(repoFile("testdata/hostile/answers/" + name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	honest := evalScript(0)
	var mu sync.Mutex
	asked := map[string]int{}
	script := func(req *llm.ChatRequestBody) llmtest.Reply {
		text := llmtest.PromptText(req)
		for key, names := range hostileReplies {
			if strings.Contains(text, key) {
				mu.Lock()
				name := names[asked[key]%len(names)] // in turn, so that each is asked
				asked[key]++
				mu.Unlock()
				body := read(name)
				if strings.HasSuffix(name, ".py") {
					body = "```python\n" + body + "\n```"
				}
				return llmtest.Reply{Text: body + "\n(hostile " + name + ")"}
			}
		}
		return honest(req)
	}
	srv := llmtest.Start(t, script, "agent-model")
	srv.KeepRequests(false)
	env, dir := evalEnv(t)
	for _, b := range evalBenches[:3] {
		if b.kind == "choice" {
			continue
		}
		must(t, env, "bench", "import", "--name", b.name, "--kind", b.kind, repoFile(b.files[0]))
	}
	initEvalRun(t, env, "h", srv.URL, 2)
	t.Log(must(t, env, "--run", "h", "eval", "--step", "0", "--bench", "tmath,tcode", "--samples", "6"))
	ctx := context.Background()
	lk, _ := lake.Open(ctx, dir)
	rows, err := lake.ReadStep[schemas.EvalResultRow](ctx, lk, "h", schemas.EvalResultsSpec.Name, 0)
	if err != nil || len(rows) != (12+4)*6 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	seen := map[string]int{}
	for _, r := range rows {
		want := 0.0
		switch {
		case strings.Contains(r.Response, "(hostile code_daemon_serves.py)"):
			want = 1 // a correct program; its daemon must not outlive its tests
		case strings.Contains(r.Response, "(hostile "):
		case strings.Contains(r.Response, "(right)"):
			want = 1
		}
		if i := strings.Index(r.Response, "(hostile "); i >= 0 {
			seen[r.Response[i:]]++
		}
		if r.Score != want {
			t.Errorf("%s/%s sample %d: score %v (%s), want %v; response %.120q", r.Bench, r.ItemID, r.Sample, r.Score, r.Detail, want, r.Response)
		}
	}
	if len(seen) != 5 {
		t.Errorf("the hostile answers asked: %v, want all five", seen)
	}
}

// TestEvalStopsOnSIGTERM signals `spade eval` (SIGTERM) once some chunks of a math and a code benchmark
// are committed: it exits 130 within seconds, the chunks it committed read back whole and equal to an
// uninterrupted evaluation's, no uncommitted chunk is visible, and a resume completes the rest.
func TestEvalStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("signals and resumes an evaluation; skipped with -short")
	}
	srv := llmtest.Start(t, evalScript(40*time.Millisecond), "agent-model")
	srv.KeepRequests(false)
	env, dir := evalEnv(t)
	for _, b := range evalBenches {
		if b.name == "tmath" || b.name == "tcode" {
			must(t, env, "bench", "import", "--name", b.name, "--kind", b.kind, repoFile(b.files[0]))
		}
	}
	args := []string{"eval", "--step", "0", "--bench", "tcode,tmath", "--samples", "2"}
	initEvalRun(t, env, "ref", srv.URL, 1)
	must(t, env, append([]string{"--run", "ref"}, args...)...)
	want, _ := evalRows(t, dir, "ref", 0)
	wantSet := map[string]bool{}
	for _, w := range want {
		wantSet[w] = true
	}

	initEvalRun(t, env, "term", srv.URL, 1)
	cmd := spadeCmd(t, append([]string{"--run", "term"}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if evalChunksCommitted(dir, "term") >= 2 {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	signalled := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("spade eval still running 20 s after SIGTERM:\n%s", out.String())
	}
	took := time.Since(signalled)
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("exit after SIGTERM: %v, want %d\n%s", err, exitInterrupted, out.String())
	}
	if took > 10*time.Second {
		t.Errorf("spade eval took %v to stop after SIGTERM", took)
	}
	t.Logf("stopped %v after SIGTERM", took)
	m := evalChunksCommitted(dir, "term")
	if m < 2 || m >= 16 {
		t.Fatalf("stopped with %d of 16 chunks committed; want a stop in the middle", m)
	}
	got, _ := evalRows(t, dir, "term", 0)
	if len(got) != 2*m {
		t.Errorf("%d rows visible for %d committed chunks of 2 samples", len(got), m)
	}
	for _, g := range got {
		if !wantSet[g] {
			t.Errorf("a committed row differs from the uninterrupted evaluation's: %.300s", g)
		}
	}
	before := srv.Count()
	must(t, env, append([]string{"--run", "term"}, args...)...)
	if asked := srv.Count() - before; asked > (16-m)*2 {
		t.Errorf("the resume asked %d calls for %d uncommitted chunks", asked, 16-m)
	}
	got, _ = evalRows(t, dir, "term", 0)
	compareLines(t, fmt.Sprintf("eval_results resumed after SIGTERM with %d chunks", m), want, got)
}
