package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/corpus"
	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/sandbox"
	"github.com/spadekit/spade/schemas"
	steprun "github.com/spadekit/spade/stages/run"
	"github.com/spadekit/spade/stages/stage"
)

// recordSampleRun rewrites the tables of testdata/sample-run (its README.md and replay.json stay):
// go test ./cmd/spade -run TestSampleRunReplays -record-sample-run
var recordSampleRun = flag.Bool("record-sample-run", false, "re-record testdata/sample-run through the scripted server")

const (
	sampleRunDir  = "../../testdata/sample-run"
	sampleRunName = "sample"
	scriptedModel = "Qwen/Qwen3-4B-Instruct-2507"
)

// sampleRunV1Dir is the first recording, made with the settings before the presets took the authors'
// values (inline hint, <action> tags, every-step hinted plays, ...): its replay.json spells every one
// of them out, so it still replays as an older prompt version.
const sampleRunV1Dir = "../../testdata/sample-run-v1"

// llmLoopTables are the tables the LLM half of the loop writes (plus the pool and the regret's outputs,
// which depend on them); a replay must reproduce each byte for byte.
var llmLoopTables = []string{"samples", "candidates", "llm_calls", "envs", "episodes", "turns", "designer_rewards", "memory"}

// sampleRunConfig is the config of the recording in dir: the qwen3-4b-games preset with the
// recording's replay.json applied (two refresh windows, steps 0-1 and 2-3, of 6 envs, group_size 4,
// 8 turns), both roles pointed at baseURL.
func sampleRunConfig(t testing.TB, dir, baseURL string) *config.Config {
	t.Helper()
	cfg, err := config.Preset("qwen3-4b-games")
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.LoadFile(filepath.Join(dir, "replay.json")); err != nil {
		t.Fatal(err)
	}
	cfg.LLM.Designer.BaseURL, cfg.LLM.Designer.Model = baseURL, scriptedModel
	cfg.LLM.Agent.BaseURL, cfg.LLM.Agent.Model = baseURL, scriptedModel
	return cfg
}

// llmScriptedServer answers the Designer from testdata/envs (every fourth first attempt broken, so the
// gate regenerates) and the Agent with llmtest.AgentScript.
func llmScriptedServer(t testing.TB) *llmtest.Server {
	t.Helper()
	programs, err := llmtest.LoadPrograms("../../testdata/envs", "games")
	if err != nil {
		t.Fatal(err)
	}
	designer, agent := llmtest.DesignerScript(programs, 4), llmtest.AgentScript()
	return llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		if strings.Contains(req.Messages[0].Content, "Environment Designer") || strings.Contains(req.Messages[0].Content, "write hints") {
			return designer(req)
		}
		return agent(req)
	}, scriptedModel)
}

// newLLMLoopLake opens a lake in dir with the testdata corpus imported as "default".
func newLLMLoopLake(t testing.TB, dir string) *lake.Lake {
	t.Helper()
	ctx := context.Background()
	lk := laketest.Open(t, dir)
	if _, err := corpus.Import(ctx, lk, "default", []string{"../../testdata/corpus/corpus.jsonl"}); err != nil {
		t.Fatal(err)
	}
	return lk
}

// runLLMLoop runs sample → generate → gate (regenerating through generate) → rollout → regret for steps
// 0..3 of a run, the way the step runner composes them.
func runLLMLoop(t testing.TB, lk *lake.Lake, run string) {
	t.Helper()
	ctx := context.Background()
	pool, err := sandbox.NewPool(ctx, sandbox.Options{Python: os.Getenv(sandbox.PythonEnv), Workers: 6})
	if err != nil {
		t.Fatalf("sandbox: %v", err)
	}
	defer pool.Close()
	env, err := stage.NewEnv(ctx, lk, run, nil)
	if err != nil {
		t.Fatal(err)
	}
	env.SetPool(pool)
	for step := int64(0); step < 4; step++ {
		for _, s := range steprun.Stages() {
			if s.Name() == stage.GRPO || !s.Due(env.Config, step) {
				continue
			}
			if _, err := stage.Execute(ctx, env, s, step); err != nil {
				t.Fatalf("%s %d: %v", s.Name(), step, err)
			}
		}
		if stage.RefreshDue(env.Config, step) {
			if envs, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: run, Table: schemas.EnvsSpec.Name, Step: step}); err != nil || len(envs) == 0 {
				t.Fatalf("gate %d accepted nothing: %v", step, err)
			}
		}
	}
}

// llmPartitionHashes maps "table/step" to the sha256 of the step's rows and "table/step/rows" to their
// count, for the run's tables. The rows are those of the step's plain partition and every fragment
// (lake.ReadStep), each encoded as its Parquet row and sorted, so the hash does not depend on how the
// writers split the step (one merged partition, or a fragment per writer). The measured column
// episodes.env_cpu_seconds is zeroed: CPU time is measured again on every run, never replayed.
func llmPartitionHashes(t testing.TB, lk *lake.Lake, run string) map[string]string {
	return llmPartitionHashesOver(t, lk, run, false)
}

// llmPartitionHashesOver is llmPartitionHashes; with beforeEnvContract, envs rows are hashed without
// their contract (schema v2), which recordings made before that column read as empty.
func llmPartitionHashesOver(t testing.TB, lk *lake.Lake, run string, beforeEnvContract bool) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, table := range llmLoopTables {
		steps, err := lk.Steps(context.Background(), run, table)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range steps {
			var rows []string
			switch table {
			case "samples":
				rows = stepRowTexts[schemas.SampleRow](t, lk, run, table, step, nil)
			case "candidates":
				rows = stepRowTexts[schemas.CandidateRow](t, lk, run, table, step, nil)
			case "llm_calls":
				rows = stepRowTexts[schemas.LLMCallRow](t, lk, run, table, step, nil)
			case "envs":
				rows = stepRowTexts(t, lk, run, table, step, func(r *schemas.EnvRow) {
					if beforeEnvContract {
						r.Contract = ""
					}
				})
			case "episodes":
				rows = stepRowTexts(t, lk, run, table, step, func(r *schemas.EpisodeRow) { r.EnvCPUSeconds = 0 })
			case "turns":
				rows = stepRowTexts[schemas.TurnRow](t, lk, run, table, step, nil)
			case "designer_rewards":
				rows = stepRowTexts[schemas.DesignerRewardRow](t, lk, run, table, step, nil)
			case "memory":
				rows = stepRowTexts[schemas.MemoryRow](t, lk, run, table, step, nil)
			default:
				t.Fatalf("llmPartitionHashes: no row type for table %s", table)
			}
			sum := sha256.Sum256([]byte(strings.Join(rows, "\x00")))
			out[fmt.Sprintf("%s/step=%d", table, step)] = hex.EncodeToString(sum[:])
			out[fmt.Sprintf("%s/step=%d/rows", table, step)] = fmt.Sprint(len(rows))
		}
	}
	return out
}

// stepRowTexts reads every row of a step (lake.ReadStep), applies normalize, encodes each row as a
// one-row Parquet file (its exact values) and returns the encodings sorted.
func stepRowTexts[T any](t testing.TB, lk *lake.Lake, run, table string, step int64, normalize func(*T)) []string {
	t.Helper()
	rows, err := lake.ReadStep[T](context.Background(), lk, run, table, step)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(rows))
	for i := range rows {
		if normalize != nil {
			normalize(&rows[i])
		}
		body, err := lake.EncodeParquet(rows[i : i+1])
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(body)
	}
	sort.Strings(out)
	return out
}

// replayLLMRun creates run "replay" in lk answering every call from `from` ("run" or "run@lake") and runs
// the loop again.
func replayLLMRun(t testing.TB, lk *lake.Lake, dir, from string) {
	t.Helper()
	cfg := sampleRunConfig(t, dir, llm.ReplayPrefix+from)
	laketest.NewRun(t, lk, "replay", cfg)
	runLLMLoop(t, lk, "replay")
}

func compareLLMRuns(t testing.TB, a map[string]string, b map[string]string) {
	t.Helper()
	if len(a) == 0 {
		t.Fatal("nothing recorded")
	}
	for k, v := range a {
		if b[k] != v {
			t.Errorf("%s differs after replay: %s vs %s", k, v, b[k])
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			t.Errorf("%s only in the replay", k)
		}
	}
}

// The full LLM half of a step on a small config: sample → generate → gate → rollout (and regret, whose
// memory the second window's prompts show), then a replay of the run that must write identical tables.
func TestLoopRecordsAndReplaysByteIdentical(t *testing.T) {
	if testing.Short() {
		t.Skip("records and replays a run (TestSampleRunReplays replays one); skipped with -short")
	}
	srv := llmScriptedServer(t)
	lk := newLLMLoopLake(t, t.TempDir())
	laketest.NewRun(t, lk, "orig", sampleRunConfig(t, sampleRunDir, srv.URL))
	runLLMLoop(t, lk, "orig")
	checkLLMLoop(t, lk, "orig")
	calls := srv.Count()
	replayLLMRun(t, lk, sampleRunDir, "orig")
	if srv.Count() != calls {
		t.Fatalf("the replay called the server %d times", srv.Count()-calls)
	}
	compareLLMRuns(t, llmPartitionHashes(t, lk, "orig"), llmPartitionHashes(t, lk, "replay"))
}

// checkLLMLoop asserts what the recorded run must show: regenerations, memory in the second window's
// prompts, hinted episodes succeeding more often, token ids for every agent turn.
func checkLLMLoop(t testing.TB, lk *lake.Lake, run string) {
	t.Helper()
	ctx := context.Background()
	cands, err := lake.ReadTable[schemas.CandidateRow](ctx, lk, run, "candidates")
	if err != nil {
		t.Fatal(err)
	}
	regenerated := 0
	for _, c := range cands {
		if c.Attempt > 1 {
			regenerated++
		}
	}
	if regenerated == 0 {
		t.Error("no slot was regenerated (the script breaks every fourth first attempt)")
	}
	calls, err := lake.ReadTable[schemas.LLMCallRow](ctx, lk, run, "llm_calls")
	if err != nil {
		t.Fatal(err)
	}
	memoryPrompts := 0
	for _, c := range calls {
		if c.Role == "designer" && c.Step == 2 && strings.Contains(c.Request, "Memory of past environments") {
			memoryPrompts++
		}
		if c.Role == "agent" && c.Error == "" && (len(c.CompletionTokenIDs) == 0 || len(c.CompletionLogprobs) != len(c.CompletionTokenIDs)) {
			t.Fatalf("agent call %s without token ids/logprobs", c.CallID)
		}
	}
	if memoryPrompts == 0 {
		t.Error("the second window's Designer prompts show no memory")
	}
	episodes, err := lake.ReadTable[schemas.EpisodeRow](ctx, lk, run, "episodes")
	if err != nil {
		t.Fatal(err)
	}
	var success, count [2]int
	for _, e := range episodes {
		h := 0
		if e.Hinted {
			h = 1
		}
		count[h]++
		if e.Success {
			success[h]++
		}
	}
	if count[0] == 0 || count[1] == 0 || success[1]*count[0] <= success[0]*count[1] {
		t.Errorf("episodes plain %d/%d hinted %d/%d: hinted should succeed more often", success[0], count[0], success[1], count[1])
	}
}

// testdata/sample-run (the presets' settings) and testdata/sample-run-v1 (the older settings, spelt out
// in its replay.json) replay offline into a fresh lake with identical tables (the demo's path).
func TestSampleRunReplays(t *testing.T) {
	ctx := context.Background()
	if *recordSampleRun {
		srv := llmScriptedServer(t)
		for _, sub := range []string{"runs", "corpora"} {
			if err := os.RemoveAll(filepath.Join(sampleRunDir, sub)); err != nil {
				t.Fatal(err)
			}
		}
		lk := laketest.Open(t, sampleRunDir)
		if _, err := corpus.Import(ctx, lk, "default", []string{"../../testdata/corpus/corpus.jsonl"}); err != nil {
			t.Fatal(err)
		}
		laketest.NewRun(t, lk, sampleRunName, sampleRunConfig(t, sampleRunDir, srv.URL))
		runLLMLoop(t, lk, sampleRunName)
		checkLLMLoop(t, lk, sampleRunName)
		if err := os.RemoveAll(filepath.Join(sampleRunDir, "corpora")); err != nil {
			t.Fatal(err)
		}
	}
	for _, dir := range []string{sampleRunDir, sampleRunV1Dir} {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			recorded := laketest.Open(t, dir)
			want := llmPartitionHashes(t, recorded, sampleRunName)
			lk := newLLMLoopLake(t, t.TempDir())
			abs, err := filepath.Abs(dir)
			if err != nil {
				t.Fatal(err)
			}
			replayLLMRun(t, lk, dir, sampleRunName+"@"+abs)
			// The recordings predate envs.contract (schema v2): their files read it empty, and the replay's
			// rows are compared over the columns the recordings have.
			recordedEnvs, err := lake.ReadTable[schemas.EnvRow](ctx, recorded, sampleRunName, "envs")
			if err != nil {
				t.Fatal(err)
			}
			before := !slices.ContainsFunc(recordedEnvs, func(e schemas.EnvRow) bool { return e.Contract != "" })
			compareLLMRuns(t, want, llmPartitionHashesOver(t, lk, "replay", before))
			if before {
				replayed, err := lake.ReadTable[schemas.EnvRow](ctx, lk, "replay", "envs")
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range replayed {
					if e.Contract != schemas.ContractLegacy {
						t.Errorf("replayed env %s (old 4-tuple program): contract %q, want legacy", e.EnvID, e.Contract)
					}
				}
			}
		})
	}
}
