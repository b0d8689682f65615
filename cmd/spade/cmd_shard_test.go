package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/lake/s3test"
	"github.com/spadekit/spade/internal/laketest"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/schemas"
)

// shardAgent answers every Agent turn with an action that is a function of the request alone, so an
// episode's turns do not depend on which process played it.
func shardAgent(req *llm.ChatRequestBody) llmtest.Reply {
	last := ""
	if n := len(req.Messages); n > 0 {
		last = fmt.Sprint(req.Messages[n-1].Content)
	}
	return llmtest.Reply{Text: fmt.Sprintf("<action>%d</action>", len(last)%4)}
}

// TestShardedGateAndRolloutCommitTheSameRows runs the gate and the rollout of one pool step as three
// shard processes against the S3 server, and as one process against another prefix of it: both commit
// the same rows (timings aside), and the sharded partitions are each one partition with three shards.
func TestShardedGateAndRolloutCommitTheSameRows(t *testing.T) {
	_, bucket := s3test.Start(t)
	srv := llmtest.Start(t, shardAgent, "agent-model")
	ctx := context.Background()
	env := append(os.Environ(), "SPADE_CACHE="+t.TempDir())
	if os.Getenv("SPADE_PYTHON") == "" {
		env = append(env, "SPADE_PYTHON=/usr/bin/python3")
	}
	spadeIn := func(args ...string) *exec.Cmd {
		cmd := exec.Command(spadeBin, args...)
		cmd.Env = env
		return cmd
	}
	candidates := shardTestCandidates(t, "shard-env")
	// A candidate that fails the gate, so gate_results holds a rejection too.
	candidates = append(candidates, schemas.CandidateRow{Slot: 5, EnvID: "shard-env-bad", Attempt: 1, Skill: schemas.SkillMath,
		Setting: schemas.SettingGames, Code: "class Broken:\n    def reset(self, seed):\n        raise ValueError('no')\n", Hint: "h"})

	prefixes := map[int]string{1: "s3://" + bucket + "/one", 3: "s3://" + bucket + "/three"}
	for shards, uri := range prefixes {
		out, err := spadeIn("--lake", uri, "--run", "r", "init", "--preset", "qwen3-4b-games", "--set", "gate.shape=lenient",
			"--set", "llm.agent.base_url="+srv.URL, "--set", "llm.agent.model=agent-model",
			"--set", "rollout.group_size=2", "--set", "rollout.plays_per_env=group_size", "--set", "grpo.batch_fill=pad", "--set", "grpo.batch_cut=random", "--set", "rollout.hinted_group_size=2", "--set", "rollout.max_turns=3", "--set", "gate.max_attempts=1",
			"--set", "generate.hint_mode=inline").CombinedOutput()
		if err != nil {
			t.Fatalf("init: %v\n%s", err, out)
		}
		lk, err := lake.Open(ctx, uri)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: "r", Table: schemas.CandidatesSpec.Name, Step: 0}, candidates, lake.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, stage := range [][]string{{"gate", "--no-regenerate"}, {"rollout"}} {
			var wg sync.WaitGroup
			errs := make([]error, shards)
			for i := 0; i < shards; i++ {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					args := append([]string{"--lake", uri, "--run", "r"}, stage...)
					args = append(args, "--step", "0", "--shard", fmt.Sprint(i), "--shards", fmt.Sprint(shards))
					var out bytes.Buffer
					cmd := spadeIn(args...)
					cmd.Stdout, cmd.Stderr = &out, &out
					if err := cmd.Run(); err != nil {
						errs[i] = fmt.Errorf("%v: %v\n%s", args, err, out.String())
					}
				}(i)
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	one, err := lake.Open(ctx, prefixes[1])
	if err != nil {
		t.Fatal(err)
	}
	three, err := lake.Open(ctx, prefixes[3])
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range []string{schemas.GateResultsSpec.Name, schemas.EnvsSpec.Name, schemas.EpisodesSpec.Name, schemas.TurnsSpec.Name} {
		a, b := shardRows(t, one, table), shardRows(t, three, table)
		if len(a) == 0 {
			t.Fatalf("%s: the single process committed no rows", table)
		}
		if strings.Join(a, "\n") != strings.Join(b, "\n") {
			t.Errorf("%s: 3 shards committed different rows than 1 process (%d vs %d rows)", table, len(b), len(a))
		}
		m, err := three.Manifest(ctx, lake.PartitionKey{Run: "r", Table: table, Step: 0})
		if err != nil || m.Shards != 3 {
			t.Errorf("%s: sharded partition manifest %+v, %v; want 3 shards", table, m, err)
		}
	}
	// The Agent's calls: every shard process commits its part of the step's "rollout" fragment of
	// llm_calls; together they are the calls of the one process, none lost to another shard's commit.
	a, b := shardRows(t, one, schemas.LLMCallsSpec.Name), shardRows(t, three, schemas.LLMCallsSpec.Name)
	turnCalls := 0
	for _, row := range a {
		if !strings.Contains(row, `"add_special_tokens":`) { // not a token-mode /tokenize call
			turnCalls++
		}
	}
	if turns := len(shardRows(t, one, schemas.TurnsSpec.Name)); turnCalls != turns {
		t.Errorf("the single process committed %d turn calls for %d turns", turnCalls, turns)
	}
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Errorf("llm_calls: 3 shards committed different rows than 1 process (%d vs %d rows)", len(b), len(a))
	}
	m, err := three.Manifest(ctx, lake.PartitionKey{Run: "r", Table: schemas.LLMCallsSpec.Name, Step: 0, Fragment: "rollout"})
	if err != nil || m.Shards != 3 {
		t.Errorf("llm_calls rollout fragment manifest %+v, %v; want 3 shards", m, err)
	}
	envs := shardRows(t, one, schemas.EnvsSpec.Name)
	if len(envs) != 5 {
		t.Errorf("%d envs accepted, want the 5 sample programs", len(envs))
	}
}

// shardRows renders a table's step-0 rows without their timing columns, sorted.
func shardRows(t *testing.T, lk *lake.Lake, table string) []string {
	t.Helper()
	ctx := context.Background()
	k := lake.PartitionKey{Run: "r", Table: table, Step: 0}
	var out []string
	switch table {
	case schemas.GateResultsSpec.Name:
		rows, err := lake.ReadRows[schemas.GateResultRow](ctx, lk, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			r.DurationMS = 0
			out = append(out, fmt.Sprintf("%+v", r))
		}
	case schemas.EnvsSpec.Name:
		rows, err := lake.ReadRows[schemas.EnvRow](ctx, lk, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%+v", r))
		}
	case schemas.EpisodesSpec.Name:
		rows, err := lake.ReadRows[schemas.EpisodeRow](ctx, lk, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			r.EnvCPUSeconds = 0
			out = append(out, fmt.Sprintf("%+v", r))
		}
	case schemas.TurnsSpec.Name:
		rows, err := lake.ReadRows[schemas.TurnRow](ctx, lk, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%+v", r))
		}
	case schemas.LLMCallsSpec.Name:
		rows, err := lake.ReadStep[schemas.LLMCallRow](ctx, lk, k.Run, k.Table, k.Step)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			r.LatencyMS = 0
			out = append(out, fmt.Sprintf("%+v", r))
		}
	case schemas.SamplesSpec.Name:
		rows, err := lake.ReadRows[schemas.SampleRow](ctx, lk, k)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%+v", r))
		}
	case schemas.CandidatesSpec.Name:
		rows, err := lake.ReadStep[schemas.CandidateRow](ctx, lk, k.Run, k.Table, k.Step)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			out = append(out, fmt.Sprintf("%+v", r))
		}
	default:
		t.Fatalf("shardRows: no renderer for %s", table)
	}
	sort.Strings(out)
	return out
}
