package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/synth"
	"github.com/spadekit/spade/schemas"
)

// spadeCmd returns the spade binary (built once by TestMain) set up to run with args.
func spadeCmd(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	return exec.Command(spadeBin, args...)
}

// scoredTables are the tables `spade run --only regret,grpo` writes.
var scoredTables = []string{schemas.DesignerRewardsSpec.Name, schemas.EMAStateSpec.Name, schemas.MemorySpec.Name,
	schemas.GRPOBatchesSpec.Name, schemas.TrainMetricsSpec.Name}

// dumpTables renders every committed partition of the tables of run r, row by row, with the columns
// that measure time zeroed (they differ between two executions of the same work).
func dumpTables(t *testing.T, dir string, tables []string) map[string]string {
	return dumpRun(t, dir, "r", tables)
}

// dumpRun is dumpTables for any run of the lake.
func dumpRun(t *testing.T, dir, run string, tables []string) map[string]string {
	t.Helper()
	ctx := context.Background()
	lk, err := lake.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, table := range tables {
		steps, err := lk.Steps(ctx, run, table)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, step := range steps {
			k := lake.PartitionKey{Run: run, Table: table, Step: step}
			fmt.Fprintf(&b, "step %d\n", step)
			var rows []string
			switch table {
			case schemas.DesignerRewardsSpec.Name:
				rows = render(t, lk, k, func(r *schemas.DesignerRewardRow) {})
			case schemas.EMAStateSpec.Name:
				rows = render(t, lk, k, func(r *schemas.EMAStateRow) {})
			case schemas.MemorySpec.Name:
				rows = render(t, lk, k, func(r *schemas.MemoryRow) {})
			case schemas.GRPOBatchesSpec.Name:
				rows = render(t, lk, k, func(r *schemas.GRPOBatchRow) {})
			case schemas.TrainMetricsSpec.Name:
				rows = render(t, lk, k, func(r *schemas.TrainMetricsRow) { r.Seconds = 0 })
			case schemas.SamplesSpec.Name:
				rows = render(t, lk, k, func(r *schemas.SampleRow) {})
			case schemas.CandidatesSpec.Name:
				rows = render(t, lk, k, func(r *schemas.CandidateRow) {})
			case schemas.GateResultsSpec.Name:
				rows = render(t, lk, k, func(r *schemas.GateResultRow) { r.DurationMS = 0 })
			case schemas.EnvsSpec.Name:
				rows = render(t, lk, k, func(r *schemas.EnvRow) {})
			case schemas.EpisodesSpec.Name:
				rows = render(t, lk, k, func(r *schemas.EpisodeRow) { r.EnvCPUSeconds = 0 })
			case schemas.TurnsSpec.Name:
				rows = render(t, lk, k, func(r *schemas.TurnRow) {})
			case schemas.LLMCallsSpec.Name:
				rows = render(t, lk, k, func(r *schemas.LLMCallRow) { r.LatencyMS = 0 })
			case schemas.RLVELevelsSpec.Name:
				rows = render(t, lk, k, func(r *schemas.RLVELevelRow) {})
			default:
				t.Fatalf("dumpTables: no renderer for %s", table)
			}
			sort.Strings(rows) // shard and merge order is not part of a partition's meaning
			b.WriteString(strings.Join(rows, "\n"))
		}
		out[table] = b.String()
	}
	return out
}

func render[T any](t *testing.T, lk *lake.Lake, k lake.PartitionKey, zero func(*T)) []string {
	t.Helper()
	// Every row of the step: its plain partition and its fragments (llm_calls, candidates).
	rows, err := lake.ReadStep[T](context.Background(), lk, k.Run, k.Table, k.Step)
	if err != nil {
		t.Fatalf("%s: %v", k, err)
	}
	out := make([]string, len(rows))
	for i := range rows {
		zero(&rows[i])
		out[i] = fmt.Sprintf("%+v", rows[i])
	}
	return out
}

// TestRunResumesAfterSIGKILL kills `spade run` with SIGKILL at random moments, at least ten times, resumes
// it each time, and checks that the final tables equal those of an uninterrupted run on the same input.
// The input is a fixture of stored rollouts (envs, episodes, turns, llm_calls with tokens), so the loop
// covers the regret and grpo stages (trainer none).
func TestRunResumesAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a run at least ten times; skipped with -short")
	}
	ctx := context.Background()
	opts := synth.SmallRollout()
	opts.Steps = 20
	newLake := func() string {
		dir := t.TempDir()
		lk, err := lake.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := synth.WriteRollout(ctx, lk, "r", opts); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	args := func(dir string) []string {
		return []string{"--lake", dir, "--run", "r", "run", "--steps", fmt.Sprintf("0-%d", opts.Steps-1), "--only", "regret,grpo"}
	}
	cache := t.TempDir()
	t.Setenv("SPADE_CACHE", cache)

	reference := newLake()
	work, err := timeWork(t, spadeCmd(t, args(reference)...))
	if err != nil {
		t.Fatalf("uninterrupted run: %v", err)
	}

	crashed := newLake()
	kills := killAndResume(t, args(crashed), work, 12)
	lk, err := lake.Open(ctx, crashed)
	if err != nil {
		t.Fatal(err)
	}
	before, _ := lk.Steps(ctx, "r", schemas.TrainMetricsSpec.Name)
	t.Logf("%d kills; %d of %d steps complete before the final resume", kills, len(before), opts.Steps)
	out, err := spadeCmd(t, args(crashed)...).CombinedOutput()
	if err != nil {
		t.Fatalf("resumed run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "regret") || !strings.Contains(string(out), "total s") {
		t.Fatalf("no time table:\n%s", out)
	}
	want, got := dumpTables(t, reference, scoredTables), dumpTables(t, crashed, scoredTables)
	for _, table := range scoredTables {
		if want[table] == "" {
			t.Fatalf("%s: the reference run wrote nothing", table)
		}
		if got[table] != want[table] {
			t.Errorf("%s differs after %d kills and resumes", table, kills)
		}
	}
}

// killAndResume runs `spade args...` again and again, each time SIGKILLing it at a random moment after
// it has started working (within the first work/slices, so most attempts are cut short and the kills
// spread over the whole run as it advances), until a run finishes on its own or 80 attempts were made.
// It fails the test when fewer than 10 kills landed.
func killAndResume(t *testing.T, args []string, work time.Duration, slices int) int {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill schedule seed %d; the uninterrupted run's stages took %v", seed, work)
	rng := rand.New(rand.NewPCG(seed, 0))
	kills, finished := 0, false
	for attempt := 0; attempt < 80 && !finished; attempt++ {
		delay := time.Duration(rng.Int64N(int64(work)/int64(slices) + 1))
		killed, err := killAfterStart(t, spadeCmd(t, args...), delay)
		switch {
		case err != nil:
			t.Fatalf("attempt %d: %v", attempt, err)
		case killed:
			kills++
		default:
			finished = true
		}
	}
	if kills < 10 {
		t.Fatalf("only %d SIGKILLs landed while spade run was working (want >= 10)", kills)
	}
	return kills
}

// timeWork runs cmd to completion and returns the time from its first stage to its exit.
func timeWork(t *testing.T, cmd *exec.Cmd) (time.Duration, error) {
	t.Helper()
	started, wait, err := startWatched(cmd)
	if err != nil {
		return 0, err
	}
	<-started
	began := time.Now()
	if err := wait(); err != nil {
		return 0, err
	}
	return time.Since(began), nil
}

// killAfterStart starts cmd, waits for its first stage to begin, then SIGKILLs it after delay. It reports
// whether the kill landed (false: the run finished first).
func killAfterStart(t *testing.T, cmd *exec.Cmd, delay time.Duration) (bool, error) {
	t.Helper()
	started, wait, err := startWatched(cmd)
	if err != nil {
		return false, err
	}
	exited := make(chan error, 1)
	go func() { exited <- wait() }()
	select {
	case <-started:
	case err := <-exited:
		return false, err // finished without starting a stage: everything was already committed
	}
	select {
	case err := <-exited:
		return false, err
	case <-time.After(delay):
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	err = <-exited
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
		return true, nil
	}
	return false, err
}

// startWatched starts cmd and returns a channel closed when its log shows the first stage starting, and a
// wait function that returns the exit error with the output attached.
func startWatched(cmd *exec.Cmd) (<-chan struct{}, func() error, error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err
	}
	started := make(chan struct{})
	var log strings.Builder
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		once := false
		for sc.Scan() {
			log.WriteString(sc.Text() + "\n")
			if !once && strings.Contains(sc.Text(), "run: stage") {
				once = true
				close(started)
			}
		}
	}()
	wait := func() error {
		<-scanned
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("%w\n%s", err, log.String())
		}
		return nil
	}
	return started, wait, nil
}

// TestRunInterruptExits130 sends SIGINT to `spade run` while it works: it exits 130 and every partition
// it left is complete (a later run finishes the same tables as an uninterrupted one).
func TestRunInterruptExits130(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Setenv("SPADE_CACHE", t.TempDir())
	lk, err := lake.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	opts := synth.SmallRollout()
	opts.Steps = 40
	if err := synth.WriteRollout(ctx, lk, "r", opts); err != nil {
		t.Fatal(err)
	}
	cmd := spadeCmd(t, "--lake", dir, "--run", "r", "run", "--steps", "0-39", "--only", "regret,grpo")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Interrupt once the first step has committed.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if done, _ := lk.Committed(ctx, lake.PartitionKey{Run: "r", Table: schemas.TrainMetricsSpec.Name, Step: 0}); done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("step 0 never committed:\n%s", out.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	_ = cmd.Process.Signal(os.Interrupt)
	err = cmd.Wait()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() != exitInterrupted {
		t.Fatalf("want exit %d after SIGINT, got %v\n%s", exitInterrupted, err, out.String())
	}
	if !strings.Contains(out.String(), "total s") {
		t.Fatalf("no time table after the interrupt:\n%s", out.String())
	}
	steps, _ := lk.Steps(ctx, "r", schemas.TrainMetricsSpec.Name)
	if len(steps) == 40 {
		t.Fatalf("the run finished before the interrupt; nothing was tested")
	}
}

// TestStageFlagsAreCheckedAsUsage: a bad step range, shard pair or stage name exits 2 with a message
// that names the flag, before any work.
func TestStageFlagsAreCheckedAsUsage(t *testing.T) {
	env := localEnv(t)
	must(t, env, "--run", "u", "init")
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--run", "u", "run", "--steps", "7-0"}, "--steps"},
		{[]string{"--run", "u", "run", "--steps", "0-1", "--only", "train"}, "--only"},
		{[]string{"--run", "u", "regret", "--step", "0", "--shard", "3", "--shards", "2"}, "--shard"},
		{[]string{"--run", "u", "grpo", "--step", "0", "--shards", "2", "--force"}, "--force"},
		{[]string{"--run", "u", "regret", "--step", "-1"}, "--step"},
		{[]string{"--run", "nope", "regret", "--step", "0"}, `no run "nope" in `},
	}
	for _, c := range cases {
		r := spade(t, env, "", c.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("spade %v: exit %d, stderr %q; want exit %d naming %s", c.args, r.code, r.stderr, exitUsage, c.want)
		}
	}
	// A stage whose input is missing is a failure (exit 1) that names the stage to run first.
	r := spade(t, env, "", "--run", "u", "regret", "--step", "0")
	if r.code != exitFailure || !strings.Contains(r.stderr, " --run u rollout --step 0` first") {
		t.Errorf("regret without episodes: exit %d, %q", r.code, r.stderr)
	}
}
