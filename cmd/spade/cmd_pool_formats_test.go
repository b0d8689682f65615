package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// fixedSettings are the init flags of a small fixed-environment run of preset (4B: plays in token mode)
// whose Agent calls url.
func fixedSettings(preset, url string, extra ...string) []string {
	return append([]string{"--preset", preset,
		"--set", "llm.agent.base_url=" + url, "--set", "llm.agent.model=agent-model",
		"--set", "llm.designer.base_url=" + url, "--set", "llm.designer.model=agent-model",
		"--set", "rollout.group_size=2", "--set", "rollout.plays_per_env=group_size", "--set", "grpo.batch_fill=pad", "--set", "grpo.batch_cut=random", "--set", "rollout.max_turns=3"}, extra...)
}

// TestPoolImportGPT55 imports the authors' pool layout (testdata/pools/gpt55: four games in the
// Gymnasium contract) through the real sandbox's gate, refuses a copy with a game changed after its
// checksum (exit 2, nothing committed), then runs two steps of the 4B fixed-gpt55 preset on it: every
// step's envs are drawn from the pool, no Designer call is made, only the Agent trains.
func TestPoolImportGPT55(t *testing.T) {
	srv := llmtest.Start(t, shardAgent, "agent-model")
	srv.KeepRequests(false)
	env := append(localEnv(t), "SPADE_PYTHON=/usr/bin/python3")
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	ctx := context.Background()

	spoiled := laketest.CopyDir(t, repoFile("testdata/pools/gpt55"))
	if err := os.WriteFile(filepath.Join(spoiled, "games", "game_000001.py"), []byte("class CounterEnv:\n    pass\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := spade(t, env, "", "pool", "import", "--format", "gpt55", spoiled)
	if r.code != 2 || !strings.Contains(r.stderr, "game_000001.py") || !strings.Contains(r.stderr, "sha256") || !strings.Contains(r.stderr, "nothing was imported") {
		t.Fatalf("a changed game: exit %d, %q", r.code, r.stderr)
	}
	lk, err := lake.Open(ctx, lakeDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lk.Manifest(ctx, lake.PoolKey("gpt55")); err == nil {
		t.Fatal("a refused import committed pool gpt55")
	}

	out := must(t, env, "pool", "import", "--format", "gpt55", repoFile("testdata/pools/gpt55"))
	if !strings.Contains(out, "pool gpt55: 4 imported, 0 rejected by the gate") {
		t.Fatalf("import:\n%s", out)
	}
	rows, err := lake.ReadRows[schemas.PoolRow](ctx, lk, lake.PoolKey("gpt55"))
	if err != nil || len(rows) != 4 {
		t.Fatalf("pool rows %d: %v", len(rows), err)
	}
	validated := 0
	for _, row := range rows {
		if !strings.HasSuffix(row.ClassName, "Env") || row.Skill == "" || row.Format != schemas.PoolGPT55 || row.Contract != schemas.ContractGymnasium {
			t.Errorf("row %+v", row)
		}
		if row.Validated {
			validated++
		}
	}
	if validated != 3 {
		t.Errorf("%d rows validated, the validation manifest says 3", validated)
	}
	// The pools view: what a user asks of the imported pool, in SQL.
	q := must(t, env, "query", "--format", "csv",
		"select pool, skill, validated, json_extract_string(meta, '$.source_run') as source_run from pools order by id")
	if want := "pool,skill,validated,source_run\ngpt55,math_reasoning,true,gpt55-test\ngpt55,pattern_recognition,true,gpt55-test\n" +
		"gpt55,optimization,false,gpt55-test\ngpt55,logical_deduction,true,gpt55-test\n"; q != want {
		t.Errorf("the pools view:\n%s\nwant\n%s", q, want)
	}
	must(t, env, append([]string{"--run", "g", "init"}, fixedSettings("qwen3-4b-fixed-gpt55", srv.URL, "--set", "sample.envs_per_step=3")...)...)
	must(t, env, "--run", "g", "run", "--steps", "0-1")
	codes := map[string]bool{}
	for _, step := range []int64{0, 1} {
		envs, err := lake.ReadRows[schemas.EnvRow](ctx, lk, lake.PartitionKey{Run: "g", Table: "envs", Step: step})
		if err != nil || len(envs) != 3 {
			t.Fatalf("envs at %d: %d, %v", step, len(envs), err)
		}
		for _, e := range envs {
			codes[e.CodeSHA256] = true
			if e.Contract != schemas.ContractGymnasium {
				t.Errorf("env %s: contract %q, want the import gate's gymnasium", e.EnvID, e.Contract)
			}
		}
	}
	if len(codes) != 4 {
		t.Errorf("two draws of 3 from 4 games without replacement use %d games, want all 4", len(codes))
	}
	episodes, err := lake.ReadTable[schemas.EpisodeRow](ctx, lk, "g", "episodes")
	if err != nil || len(episodes) != 2*3*2 {
		t.Fatalf("episodes: %d, %v (want 2 steps × 3 envs × 2 plays, no hinted plays)", len(episodes), err)
	}
	for _, e := range episodes {
		if e.Hinted || e.EndedBy == schemas.EndedEnvError {
			t.Errorf("episode %+v", e)
		}
	}
	calls, err := lake.ReadTable[schemas.LLMCallRow](ctx, lk, "g", "llm_calls")
	if err != nil || len(calls) == 0 {
		t.Fatalf("llm_calls: %d, %v", len(calls), err)
	}
	for _, c := range calls {
		if c.Role != schemas.RoleAgent {
			t.Fatalf("a %s call in a fixed-gpt55 run", c.Role)
		}
	}
	if steps, _ := lk.Steps(ctx, "g", "train_metrics"); len(steps) != 2 {
		t.Errorf("train_metrics at %v, want 0-1", steps)
	}
}

// rlveAgent solves the testdata RLVE problems when right is set (the sum, or the largest value, of the
// numbers the problem lists) and answers -1 otherwise.
func rlveAgent(right bool) llmtest.Script {
	sum := regexp.MustCompile(`Add these numbers: ([0-9 ]+)`)
	largest := regexp.MustCompile(`Largest of: ([0-9 ]+)`)
	return func(req *llm.ChatRequestBody) llmtest.Reply {
		text := ""
		for _, m := range req.Messages {
			text += fmt.Sprint(m.Content) + "\n"
		}
		answer := -1
		if right {
			if m := sum.FindStringSubmatch(text); m != nil {
				answer = 0
				for _, f := range strings.Fields(m[1]) {
					n, _ := strconv.Atoi(f)
					answer += n
				}
			} else if m := largest.FindStringSubmatch(text); m != nil {
				for _, f := range strings.Fields(m[1]) {
					n, _ := strconv.Atoi(f)
					answer = max(answer, n)
				}
			}
		}
		return llmtest.Reply{Text: fmt.Sprintf("Working it out. \\boxed{%d}", answer)}
	}
}

// TestPoolImportRLVE imports the testdata RLVE environments (testdata/pools/rlve: RLVE's Gym shape)
// through the real sandbox's gate, with the pool's own import allowlist (LargestValue imports array,
// which the same program fails without), and runs the 4B fixed-rlve preset against an Agent that always
// solves the problem and one that never does: every play of an env's step sees one problem at its level
// (SumList at level L lists 2 + L numbers), the solving run's windows move up by RLVE's rule and the
// other's stay at level 0.
func TestPoolImportRLVE(t *testing.T) {
	if testing.Short() {
		t.Skip("two six-step runs in the real sandbox; skipped with -short")
	}
	env := append(localEnv(t), "SPADE_PYTHON=/usr/bin/python3")
	lakeDir := strings.TrimPrefix(env[0], "SPADE_LAKE=")
	ctx := context.Background()
	gym := repoFile("testdata/pools/rlve/Gym")
	out := must(t, env, "pool", "import", "--format", "rlve", "--rlve-envs", "all", gym)
	if !strings.Contains(out, "pool rlve: 2 imported, 1 rejected by the gate") || !strings.Contains(out, "rejected UsesSibling") {
		t.Fatalf("import:\n%s", out)
	}
	lk, err := lake.Open(ctx, lakeDir)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := lake.ReadRows[schemas.PoolRow](ctx, lk, lake.PoolKey("rlve"))
	if err != nil || len(rows) != 2 {
		t.Fatalf("pool rows %d: %v", len(rows), err)
	}
	for _, row := range rows {
		if row.Contract != schemas.ContractGymnasium || row.ClassName != "RLVE"+row.Name+"Env" {
			t.Errorf("row %s: contract %q, class %q", row.Name, row.Contract, row.ClassName)
		}
	}
	// The same program as a plain pool: the default allowlist refuses its import of array, --allow-import
	// takes it and records it.
	dir := t.TempDir()
	for _, row := range rows {
		if row.Name == "LargestValue" {
			os.WriteFile(filepath.Join(dir, "largest.py"), []byte(row.Code), 0o644)
		}
	}
	r := spade(t, env, "", "pool", "import", "--name", "plain", dir)
	if r.code != 2 || !strings.Contains(r.stdout, "array") {
		t.Fatalf("the default allowlist: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if out := must(t, env, "pool", "import", "--name", "plain", "--allow-import", "array", dir); !strings.Contains(out, "1 imported") {
		t.Fatalf("--allow-import array:\n%s", out)
	}
	plain, _ := lake.ReadRows[schemas.PoolRow](ctx, lk, lake.PoolKey("plain"))
	if len(plain) != 1 || !slices.Contains(plain[0].AllowedImports, "array") {
		t.Fatalf("plain pool rows %+v", plain)
	}

	const steps = 6
	for _, right := range []bool{true, false} {
		srv := llmtest.Start(t, rlveAgent(right), "agent-model")
		srv.KeepRequests(false)
		run := fmt.Sprintf("v-%v", right)
		must(t, env, append([]string{"--run", run, "init"}, fixedSettings("qwen3-4b-fixed-rlve", srv.URL,
			"--set", "rollout.group_size=3", "--set", "sample.rlve_tau_num=3", "--set", "sample.rlve_window=2", "--set", "sample.rlve_max_level=4")...)...)
		must(t, env, "--run", run, "run", "--steps", fmt.Sprintf("0-%d", steps-1))
		levels, err := lake.ReadTable[schemas.RLVELevelRow](ctx, lk, run, "rlve_levels")
		if err != nil || len(levels) != 2*steps {
			t.Fatalf("%s: %d level rows, %v", run, len(levels), err)
		}
		turns, err := lake.ReadTable[schemas.TurnRow](ctx, lk, run, "turns")
		if err != nil {
			t.Fatal(err)
		}
		episodes, err := lake.ReadTable[schemas.EpisodeRow](ctx, lk, run, "episodes")
		if err != nil || len(episodes) != 2*3*steps {
			t.Fatalf("%s: %d episodes, %v", run, len(episodes), err)
		}
		for _, e := range episodes {
			if want := map[bool]float64{true: 1, false: 0}[right]; e.Return != want || e.Turns != 1 || e.EndedBy != schemas.EndedDone {
				t.Fatalf("%s: episode %+v, want return %v after one turn", run, e, want)
			}
		}
		calls, err := lake.ReadTable[schemas.LLMCallRow](ctx, lk, run, "llm_calls")
		if err != nil || len(calls) != len(episodes) {
			t.Fatalf("%s: %d calls for %d single-turn episodes, %v", run, len(calls), len(episodes), err)
		}
		for _, c := range calls {
			// rollout.agent_prompt problem: the problem as it is, then the request for a boxed answer.
			if !strings.Contains(c.Request, "Reason it through step by step") || strings.Contains(c.Request, "language game") {
				t.Fatalf("%s: the Agent was asked %.400s", run, c.Request)
			}
		}
		top := map[string]int32{}
		for _, l := range levels {
			if high, seen := top[l.Name]; !seen || l.High > high {
				top[l.Name] = l.High
			}
			if l.Name != "SumList" {
				continue
			}
			// Every play of the env's step saw one problem, of 2 + level numbers.
			problems := map[string]bool{}
			for _, tr := range turns {
				if tr.Step == l.Step && strings.Contains(tr.Observation, "Add these numbers:") && tr.EnvID == l.EnvID {
					problems[tr.Observation] = true
					line := regexp.MustCompile(`Add these numbers: ([0-9 ]+)`).FindStringSubmatch(tr.Observation)
					if line == nil || len(strings.Fields(line[1])) != 2+int(l.Level) {
						t.Fatalf("%s step %d: SumList at level %d showed %q", run, l.Step, l.Level, tr.Observation)
					}
				}
			}
			if len(problems) != 1 {
				t.Fatalf("%s step %d: the plays of SumList saw %d problems, want one", run, l.Step, len(problems))
			}
		}
		if len(top) != 2 {
			t.Fatalf("%s: levels of %v, want SumList and LargestValue", run, top)
		}
		if right {
			// The run replays offline (every Agent answer from its llm_calls) to the same tables.
			replay := run + "-replay"
			must(t, env, append([]string{"--run", replay, "init"}, fixedSettings("qwen3-4b-fixed-rlve", "replay:"+run,
				"--set", "rollout.group_size=3", "--set", "sample.rlve_tau_num=3", "--set", "sample.rlve_window=2", "--set", "sample.rlve_max_level=4")...)...)
			must(t, env, "--run", replay, "run", "--steps", fmt.Sprintf("0-%d", steps-1))
			tables := []string{"rlve_levels", "envs", "episodes", "turns"}
			want, got := dumpRun(t, lakeDir, run, tables), dumpRun(t, lakeDir, replay, tables)
			for _, table := range tables {
				if want[table] == "" || got[table] != want[table] {
					t.Errorf("%s of the replayed run differs from %s's", table, run)
				}
			}
		}
		for name, high := range top {
			if right && high < 2 {
				t.Errorf("%s: %s reached level %d after %d steps of correct answers (3 plays a step, tau_num 3)", run, name, high, steps)
			}
			if !right && high != 0 {
				t.Errorf("%s: %s moved to level %d with no correct answer", run, name, high)
			}
		}
	}
}
