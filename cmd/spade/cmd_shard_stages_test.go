package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/shard"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/rollout"
)

// stageEnv is the environment of the spade child processes of these tests.
func stageEnv(t *testing.T) []string {
	env := append(os.Environ(), "SPADE_CACHE="+t.TempDir())
	if os.Getenv("SPADE_PYTHON") == "" {
		env = append(env, "SPADE_PYTHON=/usr/bin/python3")
	}
	return env
}

// runShards runs one stage of step 0 as `shards` concurrent processes and fails on any error.
func runShards(t *testing.T, env []string, uri string, shards int, stage ...string) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, shards)
	for i := range shards {
		wg.Go(func() {
			args := append([]string{"--lake", uri, "--run", "r"}, stage...)
			args = append(args, "--step", "0", "--shard", fmt.Sprint(i), "--shards", fmt.Sprint(shards))
			cmd := exec.Command(spadeBin, args...)
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				errs[i] = fmt.Errorf("%v: %v\n%s", args, err, out.String())
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestShardedSampleAndGenerateCommitTheSameRows runs sample and generate of one refresh step as three
// shard processes against the S3 server, and as one process under another prefix: both commit the same
// samples, candidates and Designer calls, and the sharded partitions have three shards.
func TestShardedSampleAndGenerateCommitTheSameRows(t *testing.T) {
	_, bucket := s3test.Start(t)
	programs, err := llmtest.LoadPrograms(repoFile("testdata/envs"), "games")
	if err != nil {
		t.Fatal(err)
	}
	srv := llmtest.Start(t, llmtest.DesignerScript(programs, 3), "designer-model")
	env := stageEnv(t)
	ctx := context.Background()
	prefixes := map[int]string{1: "s3://" + bucket + "/one", 3: "s3://" + bucket + "/three"}
	for shards, uri := range prefixes {
		for _, args := range [][]string{
			{"init", "--preset", "qwen3-4b-games", "--set", "gate.shape=lenient", "--set", "llm.designer.base_url=" + srv.URL, "--set", "llm.designer.model=designer-model",
				"--set", "sample.envs_per_step=7", "--set", "seed=11"},
			{"corpus", "import", "--name", "default", repoFile("testdata/corpus/corpus.jsonl")},
		} {
			cmd := exec.Command(spadeBin, append([]string{"--lake", uri, "--run", "r"}, args...)...)
			cmd.Env = env
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", args, err, out)
			}
		}
		runShards(t, env, uri, shards, "sample")
		runShards(t, env, uri, shards, "generate")
	}
	one, err := lake.Open(ctx, prefixes[1])
	if err != nil {
		t.Fatal(err)
	}
	three, err := lake.Open(ctx, prefixes[3])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{schemas.SamplesSpec.Name, schemas.CandidatesSpec.Name, schemas.LLMCallsSpec.Name} {
		a, b := shardRows(t, one, table), shardRows(t, three, table)
		if len(a) != 7 {
			t.Fatalf("%s: the single process committed %d rows, want one per slot (7)", table, len(a))
		}
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: 3 shards committed different rows than 1 process (%d vs %d rows)", table, len(b), len(a))
		}
	}
	for _, key := range []lake.PartitionKey{
		{Run: "r", Table: schemas.SamplesSpec.Name},
		{Run: "r", Table: schemas.CandidatesSpec.Name},
		{Run: "r", Table: schemas.LLMCallsSpec.Name, Fragment: "generate"},
	} {
		if m, err := three.Manifest(ctx, key); err != nil || m.Shards != 3 {
			t.Errorf("%s: manifest %+v, %v; want 3 shards", key, m, err)
		}
	}
	// --force needs one writer.
	cmd := exec.Command(spadeBin, "--lake", prefixes[3], "--run", "r", "generate", "--step", "0", "--shard", "1", "--shards", "3", "--force")
	cmd.Env = env
	if err := cmd.Run(); err == nil || cmd.ProcessState.ExitCode() != 2 {
		t.Errorf("generate --force with --shards 3: %v, want a usage error (exit 2)", err)
	}
}

// TestRolloutResumesAfterKillBetweenTurnsAndEpisodes kills `spade rollout` with SIGKILL after it
// committed turns (and its llm_calls fragment) but before episodes, then re-runs the same command with a
// model that answers differently: the re-run succeeds, and every committed turn and call is the re-run's
// (none of the killed attempt's rows survive beside the new episodes). Unsharded, and as one of three
// shards whose turns partition the killed shard had completed.
func TestRolloutResumesAfterKillBetweenTurnsAndEpisodes(t *testing.T) {
	var attempt atomic.Int32
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		reply := shardAgent(req)
		reply.Text = fmt.Sprintf("attempt %d: %s", attempt.Load(), reply.Text)
		return reply
	}, "agent-model")
	candidates := shardTestCandidates(t, "kill-env")
	for _, shards := range []int{1, 3} {
		t.Run(fmt.Sprintf("shards=%d", shards), func(t *testing.T) {
			attempt.Store(1)
			env := stageEnv(t)
			uri := t.TempDir()
			ctx := context.Background()
			spade := func(extraEnv []string, args ...string) *exec.Cmd {
				cmd := exec.Command(spadeBin, append([]string{"--lake", uri, "--run", "r"}, args...)...)
				cmd.Env = append(append([]string{}, env...), extraEnv...)
				return cmd
			}
			out, err := spade(nil, "init", "--preset", "qwen3-4b-games", "--set", "gate.shape=lenient", "--set", "llm.agent.base_url="+srv.URL, "--set", "llm.agent.model=agent-model",
				"--set", "rollout.group_size=2", "--set", "rollout.plays_per_env=group_size", "--set", "grpo.batch_fill=pad", "--set", "grpo.batch_cut=random", "--set", "rollout.hinted_group_size=2", "--set", "rollout.max_turns=3", "--set", "gate.max_attempts=1",
				"--set", "generate.hint_mode=inline").CombinedOutput()
			if err != nil {
				t.Fatalf("init: %v\n%s", err, out)
			}
			lk, err := lake.Open(ctx, uri)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "r", Table: schemas.CandidatesSpec.Name}, candidates, lake.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			if out, err := spade(nil, "gate", "--no-regenerate", "--step", "0").CombinedOutput(); err != nil {
				t.Fatalf("gate: %v\n%s", err, out)
			}
			shardArgs := func(i int) []string {
				return []string{"rollout", "--step", "0", "--shard", fmt.Sprint(i), "--shards", fmt.Sprint(shards)}
			}
			killed := shard.Of(candidates[0].EnvID, shards) // a shard that plays at least one env
			for i := range shards {
				if i != killed {
					if out, err := spade(nil, shardArgs(i)...).CombinedOutput(); err != nil {
						t.Fatalf("rollout shard %d: %v\n%s", i, err, out)
					}
				}
			}
			// The killed shard is the last: it has written its turns (and its calls) when it dies.
			marker := filepath.Join(t.TempDir(), "held")
			cmd := spade([]string{rollout.HoldAfterTurnsEnv + "=" + marker}, shardArgs(killed)...)
			var log bytes.Buffer
			cmd.Stdout, cmd.Stderr = &log, &log
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(60 * time.Second)
			for {
				if _, err := os.Stat(marker); err == nil {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("rollout never reached the point between turns and episodes:\n%s", log.String())
				}
				time.Sleep(20 * time.Millisecond)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			step := func(table string) lake.PartitionKey { return lake.PartitionKey{Run: "r", Table: table} }
			// The stage's tables commit as one unit (one record per stage and step): a kill between the
			// turns and the episodes leaves neither visible.
			if ok, _ := lk.Committed(ctx, step(schemas.TurnsSpec.Name)); ok {
				t.Fatal("turns visible although the rollout was killed before its commit")
			}
			if ok, _ := lk.Committed(ctx, step(schemas.EpisodesSpec.Name)); ok {
				t.Fatal("episodes committed although the rollout was killed before them")
			}

			attempt.Store(2)
			if out, err := spade(nil, shardArgs(killed)...).CombinedOutput(); err != nil {
				t.Fatalf("re-run of the killed rollout: %v\n%s", err, out)
			}
			episodes, err := lake.ReadRows[schemas.EpisodeRow](ctx, lk, step(schemas.EpisodesSpec.Name))
			if err != nil {
				t.Fatal(err)
			}
			turns, err := lake.ReadRows[schemas.TurnRow](ctx, lk, step(schemas.TurnsSpec.Name))
			if err != nil {
				t.Fatal(err)
			}
			calls, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, "r", schemas.LLMCallsSpec.Name, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(episodes) != 5*2*2 {
				t.Fatalf("%d episodes, want 5 envs × 2 groups × 2", len(episodes))
			}
			wantTurns := 0
			for _, e := range episodes {
				wantTurns += int(e.Turns)
			}
			turnCalls := 0
			for _, c := range calls {
				if !tokenizeCall(c) {
					turnCalls++
				}
			}
			if len(turns) != wantTurns || turnCalls != len(turns) {
				t.Fatalf("%d turns and %d turn calls for episodes of %d turns: rows of the killed attempt survived", len(turns), turnCalls, wantTurns)
			}
			text := map[string]string{}
			for _, c := range calls {
				text[c.CallID] = c.ResponseText
			}
			for _, tr := range turns {
				want := "attempt 1:"
				if shard.Of(tr.EnvID, shards) == killed {
					want = "attempt 2:"
				}
				got, ok := text[tr.CallID]
				if !ok || !strings.HasPrefix(got, want) {
					t.Fatalf("turn %s/%d (env %s) answered by %q, want the answer of %s", tr.EpisodeID, tr.Turn, tr.EnvID, got, strings.TrimSuffix(want, ":"))
				}
			}
		})
	}
}

// shardTestCandidates are five sample programs of testdata/envs as attempt-1 candidates of step 0, with
// env ids idPrefix-0 .. idPrefix-4.
func shardTestCandidates(t *testing.T, idPrefix string) []schemas.CandidateRow {
	t.Helper()
	var out []schemas.CandidateRow
	for slot, name := range []string{"logic_mastermind", "math_arithmetic_chain", "causal_switchboard", "logic_knights_knaves", "causal_structure"} {
		code, err := os.ReadFile(repoFile(filepath.Join("testdata", "envs", name+".py")))
		if err != nil {
			t.Fatal(err)
		}
		hint, _ := os.ReadFile(repoFile(filepath.Join("testdata", "envs", name+".hint")))
		skill := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(string(code), "\n", 2)[0], "# skill:"))
		out = append(out, schemas.CandidateRow{Slot: int32(slot), EnvID: fmt.Sprintf("%s-%d", idPrefix, slot), Attempt: 1,
			Skill: skill, Setting: schemas.SettingGames, Code: string(code), Hint: strings.TrimSpace(string(hint))})
	}
	return out
}
