package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spade-rl/spade/internal/llm"
	"github.com/spade-rl/spade/internal/llm/llmtest"
	"github.com/spade-rl/spade/schemas"
)

// loopTables are every table one step of the whole loop writes.
var loopTables = []string{schemas.SamplesSpec.Name, schemas.CandidatesSpec.Name, schemas.GateResultsSpec.Name,
	schemas.EnvsSpec.Name, schemas.EpisodesSpec.Name, schemas.TurnsSpec.Name, schemas.LLMCallsSpec.Name,
	schemas.DesignerRewardsSpec.Name, schemas.EMAStateSpec.Name, schemas.MemorySpec.Name,
	schemas.GRPOBatchesSpec.Name, schemas.TrainMetricsSpec.Name}

// loopScript is a deterministic model for both roles: the Designer answers with one of the sample
// programs of testdata/envs (picked by a hash of the request) and its hint; the Agent as shardAgent.
func loopScript(t *testing.T) llmtest.Script {
	t.Helper()
	var answers []string
	for _, name := range []string{"logic_mastermind", "math_arithmetic_chain", "causal_switchboard", "logic_knights_knaves"} {
		code, err := os.ReadFile(repoFile(filepath.Join("testdata", "envs", name+".py")))
		if err != nil {
			t.Fatal(err)
		}
		hint, err := os.ReadFile(repoFile(filepath.Join("testdata", "envs", name+".hint")))
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, "```python\n"+string(code)+"\n```\n<hint>"+strings.TrimSpace(string(hint))+"</hint>")
	}
	return func(req *llm.ChatRequestBody) llmtest.Reply {
		if req.Model != "designer-model" {
			return shardAgent(req)
		}
		h := fnv.New32a()
		for _, m := range req.Messages {
			fmt.Fprint(h, m.Content)
		}
		return llmtest.Reply{Text: answers[int(h.Sum32())%len(answers)]}
	}
}

// TestWholeLoopResumesAfterSIGKILL runs `spade run --steps 0-7` (two pools: sample, generate, gate in the
// real sandbox, rollout, regret, grpo) against a deterministic scripted model, kills it with SIGKILL at
// random moments at least ten times, resumes it, and checks that every table equals that of an
// uninterrupted run (timing columns aside).
func TestWholeLoopResumesAfterSIGKILL(t *testing.T) {
	srv := llmtest.Start(t, loopScript(t), "designer-model", "agent-model")
	srv.KeepRequests(false)
	t.Setenv("SPADE_CACHE", t.TempDir())
	if os.Getenv("SPADE_PYTHON") == "" {
		t.Setenv("SPADE_PYTHON", "/usr/bin/python3")
	}
	newLake := func() string {
		dir := t.TempDir()
		for _, args := range [][]string{
			{"--lake", dir, "--run", "r", "init", "--preset", "qwen3-4b-games",
				"--set", "llm.designer.base_url=" + srv.URL, "--set", "llm.designer.model=designer-model",
				"--set", "llm.agent.base_url=" + srv.URL, "--set", "llm.agent.model=agent-model",
				"--set", "sample.corpus=testdata", "--set", "sample.envs_per_step=3",
				"--set", "rollout.group_size=2", "--set", "rollout.max_turns=3", "--set", "gate.max_attempts=2"},
			{"--lake", dir, "corpus", "import", "--name", "testdata", repoFile("testdata/corpus/corpus.jsonl")},
		} {
			if out, err := exec.Command(spadeBin, args...).CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
		}
		return dir
	}
	args := func(dir string) []string { return []string{"--lake", dir, "--run", "r", "run", "--steps", "0-7"} }

	reference := newLake()
	work, err := timeWork(t, spadeCmd(t, args(reference)...))
	if err != nil {
		t.Fatalf("uninterrupted run: %v", err)
	}
	crashed := newLake()
	kills := killAndResume(t, args(crashed), work, 6)
	out, err := spadeCmd(t, args(crashed)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	t.Logf("%d kills; final resume:\n%s", kills, tail(string(out), 12))
	want, got := dumpTables(t, reference, loopTables), dumpTables(t, crashed, loopTables)
	for _, table := range loopTables {
		if !strings.Contains(want[table], "step 7") && table != schemas.SamplesSpec.Name && table != schemas.CandidatesSpec.Name &&
			table != schemas.GateResultsSpec.Name && table != schemas.EnvsSpec.Name && table != schemas.MemorySpec.Name {
			t.Errorf("%s: the reference run did not reach step 7", table)
		}
		if got[table] != want[table] {
			t.Errorf("%s differs after %d kills and resumes", table, kills)
		}
	}
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}
