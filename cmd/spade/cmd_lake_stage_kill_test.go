package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
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
	"github.com/spadekit/spade/schemas"
)

// The lake-integrity tests of internal/lake drive the commit protocol from a test program; these drive it
// through the real stage command: `spade rollout`, whose one step writes episodes, turns and its llm_calls
// fragment, every part of them through the sandbox and a scripted model whose answers carry the writer's
// tag, so every visible row says which process wrote it.

// taggedAgent is a scripted Agent whose every answer starts with the tag tag() returns at the time.
func taggedAgent(t *testing.T, tag func() string) string {
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		reply := shardAgent(req)
		reply.Text = tag() + ": " + reply.Text
		return reply
	}, "agent-model")
	return srv.URL
}

// rolloutFixture is a run whose step 0 is gated (five sample envs) and not yet played; the Agent's base
// URL is left empty in run.json so each process is pointed at its own scripted server by OPENAI_BASE_URL.
type rolloutFixture struct {
	uri, run string
	env      []string
	lk       *lake.Lake
}

func newRolloutFixture(t *testing.T, uri, run, gateURL string) *rolloutFixture {
	t.Helper()
	f := &rolloutFixture{uri: uri, run: run, env: stageEnv(t)}
	if out, err := f.cmd(gateURL, "init", "--preset", "qwen3-4b-games", "--set", "gate.shape=lenient", "--set", "llm.agent.base_url=", "--set", "llm.agent.model=agent-model",
		"--set", "rollout.group_size=2", "--set", "rollout.plays_per_env=group_size", "--set", "grpo.batch_fill=pad", "--set", "grpo.batch_cut=random", "--set", "rollout.hinted_group_size=2", "--set", "rollout.max_turns=3", "--set", "gate.max_attempts=1",
		"--set", "generate.hint_mode=inline").CombinedOutput(); err != nil {
		t.Fatalf("init: %v\n%s", err, out)
	}
	ctx := context.Background()
	lk, err := lake.Open(ctx, uri)
	if err != nil {
		t.Fatal(err)
	}
	f.lk = lk
	if _, err := laketest.Commit(ctx, lk, lake.PartitionKey{Run: run, Table: schemas.CandidatesSpec.Name}, shardTestCandidates(t, run+"-env"), lake.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err := f.cmd(gateURL, "gate", "--no-regenerate", "--step", "0").CombinedOutput(); err != nil {
		t.Fatalf("gate: %v\n%s", err, out)
	}
	return f
}

// cmd is a spade command on the fixture's run with the Agent at agentURL.
func (f *rolloutFixture) cmd(agentURL string, args ...string) *exec.Cmd {
	cmd := exec.Command(spadeBin, append([]string{"--lake", f.uri, "--run", f.run}, args...)...)
	cmd.Env = append(append([]string{}, f.env...), "OPENAI_BASE_URL="+agentURL)
	return cmd
}

// rolloutState is what a reader sees of step 0's rollout: the tag of every visible Agent call, and
// whether episodes, turns and calls agree row for row (the episodes' turn counts sum to the turns, every
// turn's call is visible, no rollout call is without its turn).
type rolloutState struct {
	tags              map[string]int
	episodes, turns   int
	consistentReasons []string
	files             []string // every visible file of the three tables, for "nothing changed"
}

func (f *rolloutFixture) state(t *testing.T) rolloutState {
	t.Helper()
	ctx := context.Background()
	st := rolloutState{tags: map[string]int{}}
	episodes, err := lake.ReadStep[schemas.EpisodeRow](ctx, f.lk, f.run, schemas.EpisodesSpec.Name, 0)
	if err != nil && !strings.Contains(err.Error(), lake.ErrNotCommitted.Error()) {
		t.Fatal(err)
	}
	turns, err := lake.ReadStep[schemas.TurnRow](ctx, f.lk, f.run, schemas.TurnsSpec.Name, 0)
	if err != nil && !strings.Contains(err.Error(), lake.ErrNotCommitted.Error()) {
		t.Fatal(err)
	}
	calls, err := lake.ReadStep[schemas.LLMCallRow](ctx, f.lk, f.run, schemas.LLMCallsSpec.Name, 0)
	if err != nil {
		t.Fatal(err)
	}
	st.episodes, st.turns = len(episodes), len(turns)
	sum := 0
	for _, e := range episodes {
		sum += int(e.Turns)
	}
	if sum != len(turns) {
		st.consistentReasons = append(st.consistentReasons, fmt.Sprintf("episodes count %d turns, turns has %d", sum, len(turns)))
	}
	agentCalls := map[string]string{}
	for _, c := range calls {
		if c.Role == schemas.RoleAgent && !tokenizeCall(c) {
			agentCalls[c.CallID] = c.ResponseText
		}
	}
	for _, tr := range turns {
		text, ok := agentCalls[tr.CallID]
		if !ok {
			st.consistentReasons = append(st.consistentReasons, "turn "+tr.EpisodeID+" without its call")
			continue
		}
		tag, _, _ := strings.Cut(text, ":")
		st.tags[tag]++
	}
	if len(agentCalls) != len(turns) {
		st.consistentReasons = append(st.consistentReasons, fmt.Sprintf("%d agent calls for %d turns", len(agentCalls), len(turns)))
	}
	for _, table := range []string{schemas.EpisodesSpec.Name, schemas.TurnsSpec.Name, schemas.LLMCallsSpec.Name} {
		parts, err := f.lk.StepPartitions(ctx, f.run, table, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range parts {
			for _, file := range p.Manifest.Files {
				st.files = append(st.files, p.Key.String()+"/"+file.Name)
			}
		}
	}
	return st
}

// oneTag returns the single tag of every visible Agent call, failing the test on a mix or an
// inconsistency between the tables.
func (st rolloutState) oneTag(t *testing.T, when string) string {
	t.Helper()
	if len(st.consistentReasons) > 0 {
		t.Fatalf("%s: the step's tables disagree: %v", when, st.consistentReasons)
	}
	if len(st.tags) != 1 {
		t.Fatalf("%s: visible rows of %d writers %v, want exactly one", when, len(st.tags), st.tags)
	}
	for tag := range st.tags {
		return tag
	}
	return ""
}

// newParts counts the part files below the run that are not in before.
func newParts(ctx context.Context, lk *lake.Lake, run string, before map[string]bool) int {
	objs, err := lk.Store().List(ctx, "runs/"+run+"/")
	if err != nil {
		return 0
	}
	n := 0
	for _, o := range objs {
		if strings.HasSuffix(o.Key, ".parquet") && !before[o.Key] {
			n++
		}
	}
	return n
}

func partKeys(t *testing.T, lk *lake.Lake, run string) map[string]bool {
	objs, err := lk.Store().List(context.Background(), "runs/"+run+"/")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, o := range objs {
		keys[o.Key] = true
	}
	return keys
}

// TestStageCommandKilledAcrossTables SIGKILLs `spade rollout --step 0 --force` after its k-th new part
// file (k cycling over 1..4, across episodes, turns and llm_calls), locally and on S3: after every kill a
// reader sees one writer's rows in all three tables, agreeing row for row (all of the old rollout or all
// of the new one); verify reports nothing but orphans, vacuum removes them, and verify is clean after.
func TestStageCommandKilledAcrossTables(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a stage command many times, locally and on S3; skipped with -short")
	}
	_, bucket := s3test.Start(t)
	for _, target := range []struct {
		name, uri string
		kills     int
	}{{"local", t.TempDir(), 6}, {"s3", "s3://" + bucket + "/killed", 4}} {
		t.Run(target.name, func(t *testing.T) {
			ctx := context.Background()
			var attempt atomic.Int32
			url := taggedAgent(t, func() string { return fmt.Sprintf("attempt %d", attempt.Load()) })
			f := newRolloutFixture(t, target.uri, "killed", url)
			if out, err := f.cmd(url, "rollout", "--step", "0").CombinedOutput(); err != nil {
				t.Fatalf("first rollout: %v\n%s", err, out)
			}
			committed := f.state(t).oneTag(t, "after the first rollout")
			outcomes := map[string]int{}
			for i := 1; i <= target.kills; i++ {
				attempt.Store(int32(i))
				before := partKeys(t, f.lk, f.run)
				after := 1 + (i-1)%4
				cmd := f.cmd(url, "rollout", "--step", "0", "--force")
				var log bytes.Buffer
				cmd.Stdout, cmd.Stderr = &log, &log
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() { done <- cmd.Wait() }()
				killed := false
			watch:
				for {
					select {
					case <-done:
						break watch
					default:
					}
					if newParts(ctx, f.lk, f.run, before) >= after {
						cmd.Process.Signal(syscall.SIGKILL)
						<-done
						killed = true
						break
					}
					time.Sleep(2 * time.Millisecond)
				}
				tag := f.state(t).oneTag(t, fmt.Sprintf("kill %d (after %d new parts)", i, after))
				switch {
				case tag == committed:
					outcomes["old rows kept"]++
				case tag == fmt.Sprintf("attempt %d", i):
					outcomes["new rows committed"]++
					committed = tag
				default:
					t.Fatalf("kill %d: visible rows of %q, neither the committed %q nor this attempt's", i, tag, committed)
				}
				if !killed {
					outcomes["finished before the kill"]++
				}
				rep, err := f.lk.Verify(ctx, f.run, lake.VerifyOptions{})
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range rep.Problems {
					if p.Kind != lake.ProblemOrphan && p.Kind != lake.ProblemTemporary {
						t.Fatalf("kill %d: verify: %+v", i, p)
					}
				}
				if len(rep.Problems) > 0 {
					outcomes["orphans left"]++
				}
				if _, err := f.lk.Vacuum(ctx, f.run, lake.VacuumOptions{}); err != nil {
					t.Fatal(err)
				}
				if rep, err := f.lk.Verify(ctx, f.run, lake.VerifyOptions{}); err != nil || len(rep.Problems) > 0 {
					t.Fatalf("kill %d: verify after vacuum: %v %+v", i, err, rep.Problems)
				}
			}
			t.Logf("%d kills: %v", target.kills, outcomes)
			if outcomes["old rows kept"] == 0 || outcomes["orphans left"] == 0 {
				t.Fatalf("no kill landed between the first part and the commit (%v): the test did not test", outcomes)
			}
			attempt.Store(99)
			if out, err := f.cmd(url, "rollout", "--step", "0", "--force").CombinedOutput(); err != nil {
				t.Fatalf("re-run after the kills: %v\n%s", err, out)
			}
			if tag := f.state(t).oneTag(t, "after the re-run"); tag != "attempt 99" {
				t.Fatalf("after the re-run: rows of %q", tag)
			}
		})
	}
}

// TestStageCommandRacingWriters starts two, then three, unforced `spade rollout --step 0` at once on a
// step nobody played, locally and on S3, each process with its own scripted Agent: exactly one exits 0;
// every other exits 1 saying another writer committed the step first (no --force advice); a reader sees
// the winner's rows in every table, agreeing row for row; verify finds no problem but orphans.
func TestStageCommandRacingWriters(t *testing.T) {
	if testing.Short() {
		t.Skip("races up to three stage commands, locally and on S3; skipped with -short")
	}
	_, bucket := s3test.Start(t)
	urls := make([]string, 3)
	for i := range urls {
		tag := fmt.Sprintf("writer %d", i)
		urls[i] = taggedAgent(t, func() string { return tag })
	}
	for _, target := range []struct{ name, uri string }{{"local", t.TempDir()}, {"s3", "s3://" + bucket + "/race"}} {
		for _, writers := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/%d", target.name, writers), func(t *testing.T) {
				var f *rolloutFixture
				var results []raceResult
				// A writer that starts after the winner committed skips the step ("already committed",
				// exit 0) and did not race: start over on a fresh run (rare; a loaded machine).
				for try := 0; ; try++ {
					f = newRolloutFixture(t, target.uri, fmt.Sprintf("race%d-%d", writers, try), urls[0])
					results = raceRollouts(f, urls[:writers])
					late := false
					for _, r := range results {
						late = late || (r.code == 0 && strings.Contains(r.out, "already committed"))
					}
					if !late || try == 4 {
						break
					}
					t.Logf("try %d: a writer started after the commit; racing again", try)
				}
				winner := -1
				for i, r := range results {
					switch {
					case r.code == 0 && winner < 0:
						winner = i
					case r.code == 0:
						t.Fatalf("writers %d and %d both exited 0:\n%s\n%s", winner, i, results[winner].out, r.out)
					case r.code != 1 || !strings.Contains(r.out, "another writer committed") || strings.Contains(r.out, "--force"):
						t.Fatalf("losing writer %d: exit %d, want 1 with the race message and no --force advice:\n%s", i, r.code, r.out)
					}
				}
				if winner < 0 {
					t.Fatalf("no writer committed: %+v", results)
				}
				if tag := f.state(t).oneTag(t, "after the race"); tag != fmt.Sprintf("writer %d", winner) {
					t.Fatalf("visible rows of %q, but writer %d won", tag, winner)
				}
				rep, err := f.lk.Verify(context.Background(), f.run, lake.VerifyOptions{})
				if err != nil || len(rep.Problems) > 0 {
					t.Fatalf("verify after the race (the losers remove their own parts): %v %+v", err, rep.Problems)
				}
				t.Logf("%d writers: writer %d won; verify clean", writers, winner)
			})
		}
	}
}

// raceResult is one racing writer's exit code and output.
type raceResult struct {
	code int
	out  string
}

// raceRollouts starts one unforced `spade rollout --step 0` per Agent URL at once and waits for all.
func raceRollouts(f *rolloutFixture, urls []string) []raceResult {
	results := make([]raceResult, len(urls))
	var wg sync.WaitGroup
	for i, url := range urls {
		wg.Go(func() {
			out, err := f.cmd(url, "rollout", "--step", "0").CombinedOutput()
			results[i].out = string(out)
			if ee, ok := err.(*exec.ExitError); ok {
				results[i].code = ee.ExitCode()
			} else if err != nil {
				results[i].code = -1
			}
		})
	}
	wg.Wait()
	return results
}

// tokenizeCall reports whether a recorded call is a /tokenize call of token mode (a text or a
// conversation tokenized between two turns) rather than a turn's model call: only tokenize bodies carry
// add_special_tokens.
func tokenizeCall(c schemas.LLMCallRow) bool {
	return strings.Contains(c.Request, `"add_special_tokens":`)
}
