package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// envPoolPrograms are the pool of the env_pool tests: three testdata envs, a trivial env any action
// solves, and two hostile programs (one spins in step, one kills its own process).
func envPoolPrograms(t *testing.T) []schemas.PoolRow {
	programs := map[string]string{
		"trivial": "class Trivial:\n    def reset(self, seed):\n        return 'Say anything.'\n" +
			"    def step(self, action):\n        return 'Done.', 1.0, True, False, {'success': True}\n",
		"hostile_spin": "class Spin:\n    def reset(self, seed):\n        return 'Go.'\n" +
			"    def step(self, action):\n        while True:\n            pass\n",
		"hostile_exit": "import os\nclass Exit:\n    def reset(self, seed):\n        return 'Go.'\n" +
			"    def step(self, action):\n        os._exit(3)\n",
	}
	for _, name := range []string{"math_arithmetic_chain", "pattern_sequences", "logic_mastermind"} {
		b, err := os.ReadFile(repoFile("testdata/envs/" + name + ".py"))
		if err != nil {
			t.Fatal(err)
		}
		programs[name] = string(b)
	}
	var rows []schemas.PoolRow
	for id, code := range programs {
		sum := sha256.Sum256([]byte(code))
		rows = append(rows, schemas.PoolRow{EntryID: id, Code: code, Hint: "the hint " + id, Setting: schemas.SettingGames,
			CodeSHA256: hex.EncodeToString(sum[:]), Source: id + ".py"})
	}
	return rows
}

// TestEvalEnvPool imports an env_pool benchmark from an imported pool, evaluates it against the scripted
// Agent (llmtest.AgentScript, which plays testdata/envs) through the sandbox, and checks the rows, that
// the hostile programs are contained and score 0, that no hint reached the Agent, and that a replay
// writes identical rows.
func TestEvalEnvPool(t *testing.T) {
	srv := llmtest.Start(t, llmtest.AgentScript(), "agent-model")
	env, dir := evalEnv(t)
	ctx := context.Background()
	lk, err := lake.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := laketest.Commit(ctx, lk, lake.PoolKey("tpool"), envPoolPrograms(t), lake.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	out := must(t, env, "bench", "import", "--name", "tenvs", "--kind", "env_pool", "--pool", "tpool")
	if !strings.Contains(out, "6 imported") {
		t.Fatalf("import: %s", out)
	}
	// The same pool again: every item a duplicate. A bad source or a file is a usage error.
	if out := must(t, env, "bench", "import", "--name", "tenvs", "--kind", "env_pool", "--pool", "tpool"); !strings.Contains(out, "6 skipped") {
		t.Errorf("re-import: %s", out)
	}
	for _, c := range [][]string{{"--pool", "nope"}, {"norun@0"}, {"run-without-step"}, {repoFile("testdata/bench/math.jsonl")}} {
		r := spade(t, env, "", append([]string{"bench", "import", "--name", "bad", "--kind", "env_pool"}, c...)...)
		if r.code != 2 || !isUsageError(r.stderr) {
			t.Errorf("bench import env_pool %v: exit %d, stderr %q", c, r.code, r.stderr)
		}
	}
	items, err := lake.ReadRows[schemas.BenchItemRow](ctx, lk, lake.BenchKey("tenvs"))
	if err != nil || len(items) != 6 {
		t.Fatalf("%d items, %v", len(items), err)
	}
	for _, it := range items {
		if it.Kind != schemas.BenchEnvPool || it.Question == "" || !strings.Contains(it.Meta, `"setting":"games"`) || it.Source != "pool:tpool" || strings.Contains(it.Meta, "hint") {
			t.Errorf("item %+v", it)
		}
	}

	initRun := func(run, baseURL string) {
		must(t, env, "--run", run, "init", "--preset", "qwen3-4b-games", "--set", "llm.agent.base_url="+baseURL,
			"--set", "llm.agent.model=agent-model", "--set", "eval.chunk_items=4", "--set", "sandbox.load_timeout_seconds=120",
			"--set", "rollout.max_turns=4", "--set", "sandbox.step_timeout_seconds=2")
	}
	initRun("a", srv.URL)
	out = must(t, env, "--run", "a", "eval", "--step", "0", "--bench", "tenvs", "--samples", "2")
	t.Log(out)
	rows, err := lake.ReadStep[schemas.EvalResultRow](ctx, lk, "a", schemas.EvalResultsSpec.Name, 0)
	if err != nil || len(rows) != 12 {
		t.Fatalf("%d eval_results rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if r.Kind != schemas.BenchEnvPool || !strings.Contains(r.Response, "obs: ") || !strings.Contains(r.Response, "\nend: ") && !strings.HasPrefix(r.Response, "end: ") {
			t.Errorf("%s/%d: response %q", r.ItemID, r.Sample, r.Response)
		}
		switch {
		case strings.HasPrefix(r.ItemID, "hostile"):
			if r.Score != 0 || !strings.Contains(r.Detail, "env failed") || r.Error != "" {
				t.Errorf("hostile %s/%d: score %v, detail %q, error %q", r.ItemID, r.Sample, r.Score, r.Detail, r.Error)
			}
		case r.ItemID == "trivial":
			if r.Score != 1 || r.PromptSHA256 == "" || r.CallID == "" || r.PromptTokens == 0 {
				t.Errorf("trivial/%d: score %v (%s), hash %q, tokens %d", r.Sample, r.Score, r.Detail, r.PromptSHA256, r.PromptTokens)
			}
		default:
			if r.Score < 0 || r.Score > 1 || r.CallID == "" {
				t.Errorf("%s/%d: score %v, call %q", r.ItemID, r.Sample, r.Score, r.CallID)
			}
		}
	}
	for _, req := range srv.Requests() {
		if text := llmtest.PromptText(&req); strings.Contains(text, "the hint") || strings.Contains(text, "HINT:") {
			t.Fatalf("a hint reached the Agent: %.300s", text)
		}
	}
	results, calls := evalRows(t, dir, "a", 0)

	// Replay: a run answering from a's calls writes the same rows.
	initRun("replayed", llm.ReplayPrefix+"a")
	must(t, env, "--run", "replayed", "eval", "--step", "0", "--bench", "tenvs", "--samples", "2")
	gotResults, gotCalls := evalRows(t, dir, "replayed", 0)
	compareLines(t, "replay eval_results", results, gotResults)
	compareLines(t, "replay llm_calls", calls, gotCalls)
}
