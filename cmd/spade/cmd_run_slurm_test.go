package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/llm/llmtest"
	"github.com/spadekit/spade/internal/slurmtest"
	"github.com/spadekit/spade/schemas"
	"github.com/spadekit/spade/stages/cluster"
)

// TestRunOnSlurmResumesACancelledShard submits two steps of a whole-loop run (step 0: sample, generate,
// gate, rollout, regret, grpo; step 1: rollout, regret, grpo) with `spade run --executor slurm --shards 2`
// to a real one-node Slurm, cancels one array task of step 0's rollout while it plays (scancel), checks
// that `spade status` shows the cancelled task with its log, runs the same command again, which submits
// that shard alone and what waits for it, and a third time, which submits nothing; then every table of
// the run equals an in-process `spade run` of the same steps.
func TestRunOnSlurmResumesACancelledShard(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Slurm and runs two whole steps through it; skipped with -short")
	}
	began := time.Now()
	c := slurmtest.Start(t)
	t.Setenv("SLURM_CONF", c.Conf)
	t.Setenv("SPADE_CACHE", t.TempDir())
	if os.Getenv("SPADE_PYTHON") == "" {
		t.Setenv("SPADE_PYTHON", "/usr/bin/python3")
	}

	// The Agent's requests wait while hold is set, so a rollout task is surely mid-step when it is
	// cancelled.
	var hold atomic.Bool
	var held atomic.Int64
	release := make(chan struct{})
	var releaseOnce sync.Once
	releaseAll := func() { releaseOnce.Do(func() { close(release) }) }
	script := loopScript(t)
	srv := llmtest.Start(t, func(req *llm.ChatRequestBody) llmtest.Reply {
		if req.Model == "agent-model" && hold.Load() {
			held.Add(1)
			select {
			case <-release:
			case <-time.After(2 * time.Minute):
			}
		}
		return script(req)
	}, "designer-model", "agent-model")
	srv.KeepRequests(false)
	t.Cleanup(releaseAll) // before the server closes: it waits for its handlers

	dir := t.TempDir()
	logs := t.TempDir()
	spade := func(args ...string) (string, error) {
		out, err := exec.Command(spadeBin, append([]string{"--lake", dir}, args...)...).CombinedOutput()
		return string(out), err
	}
	spadeOK := func(args ...string) string {
		t.Helper()
		out, err := spade(args...)
		if err != nil {
			t.Fatalf("spade %v: %v\n%s\n%s", args, err, out, c.Log())
		}
		return out
	}
	spadeOK("corpus", "import", "--name", "testdata", repoFile("testdata/corpus/corpus.jsonl"))
	spadeOK(append([]string{"--run", "ref", "init"}, loopSettings(srv.URL, srv.URL)...)...)
	inProcess := time.Now()
	spadeOK("--run", "ref", "run", "--steps", "0-1")
	inProcessTime := time.Since(inProcess)

	// Every stage's jobs ask for one CPU: the machine may have only two.
	settings := loopSettings(srv.URL, srv.URL)
	for _, s := range []string{"sample", "generate", "gate", "rollout", "regret", "grpo"} {
		settings = append(settings, "--set", "slurm."+s+".cpus=1")
	}
	settings = append(settings, "--set", "slurm.log_dir="+logs)
	spadeOK(append([]string{"--run", "r", "init"}, settings...)...)
	ctx := context.Background()
	lk, err := lake.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	onSlurm := time.Now()
	out := spadeOK("--run", "r", "run", "--steps", "0-1", "--executor", "slurm", "--shards", "2")
	if !strings.Contains(out, "9 submitted, 0 still pending or running from earlier, 0 already committed") {
		t.Fatalf("first submission:\n%s", out)
	}
	first, err := cluster.Records(ctx, lk, "r")
	if err != nil {
		t.Fatal(err)
	}
	var rollout0 cluster.Record
	for _, r := range first {
		if r.Step == 0 && r.Stage == "rollout" {
			rollout0 = r
		}
	}
	if len(first) != 9 || rollout0.Job == "" || sprint(rollout0.Tasks) != "[0 1]" {
		t.Fatalf("records after the first submission: %+v", first)
	}

	// Hold the Agent once the gate's envs are in, before the rollout tasks start.
	waitFor(t, c, 3*time.Minute, "step 0's gate committed", func() bool {
		ok, err := lk.Committed(ctx, lake.PartitionKey{Run: "r", Table: schemas.EnvsSpec.Name, Step: 0})
		return err == nil && ok
	})
	hold.Store(true)
	// The victim is a task whose Agent request is held; a shard that owns no env (or finished its
	// episodes) may complete meanwhile, the other one is held until the cancel.
	var victim, other int
	waitFor(t, c, 2*time.Minute, "a rollout task running with an Agent request held", func() bool {
		st := squeue(t, c)
		running := 0
		for shard := range 2 {
			switch st[rollout0.TaskID(shard)] {
			case "RUNNING":
				running++
				victim, other = shard, 1-shard
			case "COMPLETED":
			default:
				return false
			}
		}
		return running > 0 && held.Load() > 0
	})
	time.Sleep(time.Second) // the other shard, if it has envs, reaches its first request too
	st := squeue(t, c)
	if st[rollout0.TaskID(0)] == "RUNNING" && st[rollout0.TaskID(1)] == "RUNNING" {
		victim, other = 1, 0
	}
	victimID, otherID := rollout0.TaskID(victim), rollout0.TaskID(other)
	otherState := st[otherID]
	during := spadeOK("--run", "r", "status")
	states := map[int]string{victim: "RUNNING", other: otherState}
	if !regexp.MustCompile(`(?m)^0 +rollout +\d of 2 shards +`+rollout0.Job+` +0:`+states[0]+` 1:`+states[1]).MatchString(during) ||
		!regexp.MustCompile(`(?m)^0 +gate +committed`).MatchString(during) ||
		!regexp.MustCompile(`(?m)^1 +grpo +not committed +\d+ +PENDING \(Dependency\)`).MatchString(during) {
		t.Errorf("status while step 0's rollout plays:\n%s", during)
	}
	if out, err := c.Command("scancel", victimID).CombinedOutput(); err != nil {
		t.Fatalf("scancel %s: %v\n%s", victimID, err, out)
	}
	waitFor(t, c, time.Minute, "the cancelled task ended", func() bool { return squeue(t, c)[victimID] == "CANCELLED" })
	hold.Store(false)
	releaseAll()
	waitFor(t, c, 2*time.Minute, "the other rollout shard finished", func() bool { return squeue(t, c)[otherID] == "COMPLETED" })
	if ok, _ := lk.Committed(ctx, lake.PartitionKey{Run: "r", Table: schemas.EpisodesSpec.Name, Step: 0}); ok {
		t.Fatal("step 0's rollout committed with a shard cancelled")
	}
	victimLog := rollout0.LogPath(victim)
	states = map[int]string{victim: "CANCELLED", other: "COMPLETED"}
	after := spadeOK("--run", "r", "status", "--steps", "0")
	if !regexp.MustCompile(`(?m)^0 +rollout +1 of 2 shards +` + rollout0.Job + ` +0:` + states[0] + ` 1:` + states[1] + ` +` + regexp.QuoteMeta(victimLog) + `$`).MatchString(after) {
		t.Errorf("status after the cancel: want shard %d CANCELLED with its log %s:\n%s", victim, victimLog, after)
	}
	if filepath.Dir(victimLog) != logs {
		t.Errorf("log %s not in slurm.log_dir %s", victimLog, logs)
	}

	// The resume: the cancelled shard alone, then everything that waits for it; nothing else.
	resume := spadeOK("--run", "r", "run", "--steps", "0-1", "--executor", "slurm", "--shards", "2")
	if !strings.Contains(resume, fmt.Sprintf("failed earlier: step 0 rollout shard %d/2: job %s CANCELLED, log %s", victim, victimID, victimLog)) {
		t.Errorf("the resume does not report the cancelled shard with its state and log:\n%s", resume)
	}
	all, err := cluster.Records(ctx, lk, "r")
	if err != nil {
		t.Fatal(err)
	}
	var again []string
	for _, r := range all[len(first):] {
		again = append(again, sprint(r.Step)+":"+r.Stage+sprint(r.Tasks))
	}
	if got, want := strings.Join(again, " "), fmt.Sprintf("0:rollout[%d] 0:regret[] 0:grpo[] 1:rollout[0 1] 1:regret[] 1:grpo[]", victim); got != want {
		t.Errorf("the resume submitted %s, want %s\n%s", got, want, resume)
	}
	if out := spadeOK("--run", "r", "run", "--steps", "0-1", "--executor", "slurm", "--shards", "2"); !strings.Contains(out, "\n0 submitted") && !strings.HasPrefix(out, "0 submitted") {
		t.Errorf("a third submission while the jobs wait submitted again:\n%s", out)
	}

	waitFor(t, c, 5*time.Minute, "step 1's grpo committed", func() bool {
		ok, err := lk.Committed(ctx, lake.PartitionKey{Run: "r", Table: schemas.TrainMetricsSpec.Name, Step: 1})
		return err == nil && ok
	})
	slurmTime := time.Since(onSlurm)
	final := spadeOK("--run", "r", "status")
	if n := len(regexp.MustCompile(`(?m)^\d +\w+ +committed `).FindAllString(final, -1)); n != 9 {
		t.Errorf("status at the end: %d of 9 stages committed:\n%s", n, final)
	}
	want, got := dumpRun(t, dir, "ref", loopTables), dumpRun(t, dir, "r", loopTables)
	for _, table := range loopTables {
		if want[table] == "" && table != schemas.MemorySpec.Name { // memory is written at pool ends only
			t.Errorf("%s: the in-process run wrote nothing", table)
		}
		if got[table] != want[table] {
			t.Errorf("%s of the run on Slurm differs from the in-process run", table)
		}
	}
	t.Logf("cancelled rollout shard %d; in-process run %.1fs; on Slurm with a cancel and a resume %.1fs; whole test %.1fs",
		victim, inProcessTime.Seconds(), slurmTime.Seconds(), time.Since(began).Seconds())
}

// squeue returns the state of every job and array task the controller holds, by id.
func squeue(t *testing.T, c *slurmtest.Cluster) map[string]string {
	t.Helper()
	out, err := c.Command("squeue", "--noheader", "--array", "--states=all", "--format=%i|%T").Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	st := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if id, state, ok := strings.Cut(strings.TrimSpace(line), "|"); ok {
			st[id] = state
		}
	}
	return st
}

// waitFor polls cond every 100ms until it holds, failing the test with the cluster's state after limit.
func waitFor(t *testing.T, c *slurmtest.Cluster, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	out, _ := c.Command("squeue", "--array", "--states=all").CombinedOutput()
	t.Fatalf("waited %s for %s\n%s\n%s", limit, what, out, c.Log())
}

func sprint(v any) string { return fmt.Sprint(v) }

// TestRunExecutorFlagsAreUsage: an unknown executor, --shards without the Slurm executor and a bad
// --shards exit 2 with a line saying what to do, before the lake is touched.
func TestRunExecutorFlagsAreUsage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--executor", "lsf"}, `--executor must be inprocess or slurm, got "lsf"`},
		{[]string{"--shards", "2"}, "--shards splits stages between Slurm jobs: pass --executor slurm"},
		{[]string{"--executor", "slurm", "--shards", "0"}, "--shards must be >= 1, got 0"},
	} {
		args := append([]string{"--lake", dir, "--run", "r", "run", "--steps", "0-1"}, tc.args...)
		out, err := spadeCmd(t, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%v: %v, want exit 2\n%s", tc.args, err, out)
		}
		if first, _, _ := strings.Cut(string(out), "\n"); !strings.Contains(first, tc.want) {
			t.Errorf("%v: %q, want a first line with %q", tc.args, out, tc.want)
		}
	}
}
