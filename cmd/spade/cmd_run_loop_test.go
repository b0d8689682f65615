package main

import (
	"fmt"
	"hash/fnv"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
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
	answers := envAnswers(t, "logic_mastermind", "math_arithmetic_chain", "causal_switchboard", "logic_knights_knaves")
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

// TestWholeLoopResumesAfterSIGKILL records a run of `spade run --steps 0-7` (two pools: sample, generate,
// gate in the real sandbox, rollout, regret, grpo) against a deterministic scripted model, then replays it
// as a second run of the same lake with the same seed (llm base URLs `replay:ref`, no server involved),
// killing the replay with SIGKILL at random moments until it finishes (at least ten kills), and checks
// that every table of the replayed run equals the recorded one (timing columns aside).
func TestWholeLoopResumesAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a replayed 8-step run at least ten times; skipped with -short")
	}
	srv := startLoopServer(t)
	t.Setenv("SPADE_CACHE", t.TempDir())
	if os.Getenv("SPADE_PYTHON") == "" {
		t.Setenv("SPADE_PYTHON", "/usr/bin/python3")
	}
	dir := t.TempDir()
	spadeOK := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(spadeBin, append([]string{"--lake", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	initRun := func(run, designerURL, agentURL string) {
		spadeOK(append([]string{"--run", run, "init"}, loopSettings(designerURL, agentURL)...)...)
	}
	spadeOK("corpus", "import", "--name", "testdata", repoFile("testdata/corpus/corpus.jsonl"))
	initRun("ref", srv.URL, srv.URL)
	work, err := timeWork(t, spadeCmd(t, "--lake", dir, "--run", "ref", "run", "--steps", "0-7"))
	if err != nil {
		t.Fatalf("recorded run: %v", err)
	}
	initRun("r", "replay:ref", "replay:ref")
	args := []string{"--lake", dir, "--run", "r", "run", "--steps", "0-7"}
	kills := killAndResume(t, args, work, 10)
	out, err := spadeCmd(t, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	t.Logf("%d kills; final resume:\n%s", kills, tail(string(out), 12))
	want, got := dumpRun(t, dir, "ref", loopTables), dumpRun(t, dir, "r", loopTables)
	for _, table := range loopTables {
		if want[table] == "" {
			t.Errorf("%s: the recorded run wrote nothing", table)
		}
		if got[table] != want[table] {
			t.Errorf("%s of the replayed run differs from the recorded run after %d kills and resumes", table, kills)
		}
	}
	if strings.Count(want[schemas.MemorySpec.Name], "step ") != 2 {
		t.Errorf("want memory snapshots at the two pool ends:\n%.300s", want[schemas.MemorySpec.Name])
	}
}

// startLoopServer starts the scripted model of the whole-loop tests.
func startLoopServer(t *testing.T) *llmtest.Server {
	srv := llmtest.Start(t, loopScript(t), "designer-model", "agent-model")
	srv.KeepRequests(false)
	return srv
}

// loopSettings are the init flags of a small whole-loop run (3 envs per pool, 2×2 episodes of at most 3
// turns) whose roles call the given base URLs.
func loopSettings(designerURL, agentURL string) []string {
	return []string{"--preset", "qwen3-4b-games",
		"--set", "llm.designer.base_url=" + designerURL, "--set", "llm.designer.model=designer-model",
		"--set", "llm.agent.base_url=" + agentURL, "--set", "llm.agent.model=agent-model",
		"--set", "sample.corpus=testdata", "--set", "sample.envs_per_step=3",
		"--set", "rollout.group_size=2", "--set", "rollout.plays_per_env=group_size", "--set", "grpo.batch_fill=pad", "--set", "grpo.batch_cut=random", "--set", "rollout.max_turns=3", "--set", "gate.max_attempts=2",
		"--set", "gate.shape=lenient"} // testdata/envs keeps spade's older program form
}

func tail(s string, lines int) string {
	all := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(all[max(0, len(all)-lines):], "\n")
}

// envAnswers are Designer answers, one per named sample program of testdata/envs (or, for a name with a
// folder, of that folder of testdata): the program in a python fence, then its hint.
func envAnswers(t *testing.T, names ...string) []string {
	t.Helper()
	var answers []string
	for _, name := range names {
		dir := filepath.Join("testdata", "envs")
		if strings.Contains(name, "/") { // a program of another folder of testdata
			dir, name = filepath.Join("testdata", filepath.Dir(name)), filepath.Base(name)
		}
		code, err := os.ReadFile(repoFile(filepath.Join(dir, name+".py")))
		if err != nil {
			t.Fatal(err)
		}
		hint, err := os.ReadFile(repoFile(filepath.Join(dir, name+".hint")))
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, "```python\n"+string(code)+"\n```\n<hint>"+strings.TrimSpace(string(hint))+"</hint>")
	}
	return answers
}
