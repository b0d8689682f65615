package main

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spadekit/spade/internal/lake"
	"github.com/spadekit/spade/internal/slurmtest"
	"github.com/spadekit/spade/stages/cluster"
)

// TestSlurmRequestsThatCannotRun, on a real one-node Slurm: `spade run --executor slurm` of a run whose
// rollout asks one CPU more than the node has (and of one whose gate asks more memory than the node
// has) exits 2 with one line naming the key and what the node offers, and submits nothing (no record,
// no job); a run whose sample job is held (slurm.sample.args=--hold) is submitted, and `spade status`
// shows the task PENDING with Slurm's reason, flagged, and a line saying how to release it; a job over a
// partition limit that sinfo's nodes do not show (MaxCPUsPerNode) is submitted, and status flags it as
// PartitionConfig with what to change.
func TestSlurmRequestsThatCannotRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Slurm; skipped with -short")
	}
	c := slurmtest.Start(t)
	t.Setenv("SLURM_CONF", c.Conf)
	dir := t.TempDir()
	spade := func(args ...string) (string, error) {
		cmd := exec.Command(spadeBin, append([]string{"--lake", dir}, args...)...)
		out, err := cmd.CombinedOutput()
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
	// Every stage asks one CPU but the one under test, so the refusal names it alone.
	oneCPU := []string{"--set", "slurm.log_dir=" + t.TempDir()}
	for _, s := range []string{"sample", "pool", "generate", "gate", "rollout", "regret", "grpo", "eval"} {
		oneCPU = append(oneCPU, "--set", "slurm."+s+".cpus=1")
	}
	memOut, err := c.Command("sinfo", "--noheader", "--Node", "--format=%m").Output()
	if err != nil {
		t.Fatal(err)
	}
	nodeMem := strings.TrimSpace(string(memOut))
	ctx := context.Background()
	lk, err := lake.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		run, set, want string
	}{
		{"cpus", fmt.Sprintf("slurm.rollout.cpus=%d", c.CPUs+1),
			fmt.Sprintf("spade: --executor slurm: nothing submitted: slurm.rollout.cpus %d exceeds the largest node of partition %s (%d CPUs); init a run with --set slurm.rollout.cpus=%d or a larger slurm.rollout.partition",
				c.CPUs+1, c.Partition, c.CPUs, c.CPUs)},
		{"mem", "slurm.gate.mem=64T",
			fmt.Sprintf("spade: --executor slurm: nothing submitted: slurm.gate.mem 64T exceeds the largest node of partition %s (%sM memory); init a run with --set slurm.gate.mem=%sM",
				c.Partition, nodeMem, nodeMem)},
	} {
		spadeOK(append(append([]string{"--run", tc.run, "init"}, oneCPU...), "--set", tc.set)...)
		out, err := spade("--run", tc.run, "run", "--steps", "0-1", "--executor", "slurm")
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Errorf("%s: %v, want exit 2\n%s", tc.run, err, out)
		}
		first, _, _ := strings.Cut(out, "\n")
		t.Logf("%s: %s", tc.run, first)
		if !strings.HasPrefix(first, tc.want) {
			t.Errorf("%s: first line\n %q\nwant it to start with\n %q", tc.run, first, tc.want)
		}
		if recs, err := cluster.Records(ctx, lk, tc.run); err != nil || len(recs) != 0 {
			t.Errorf("%s: %d job records after a refusal (%v), want none", tc.run, len(recs), err)
		}
	}
	if jobs := squeue(t, c); len(jobs) != 0 {
		t.Errorf("jobs in Slurm after the refusals: %v", jobs)
	}

	spadeOK(append(append([]string{"--run", "held", "init"}, oneCPU...), "--set", "slurm.sample.args=--hold")...)
	out := spadeOK("--run", "held", "run", "--steps", "0", "--only", "sample", "--executor", "slurm")
	if !strings.Contains(out, "1 submitted") {
		t.Fatalf("the held run's submission:\n%s", out)
	}
	recs, err := cluster.Records(ctx, lk, "held")
	if err != nil || len(recs) != 1 {
		t.Fatalf("records of the held run: %+v, %v", recs, err)
	}
	job := recs[0].Job
	status := spadeOK("--run", "held", "status")
	t.Logf("status of the held run:\n%s", status)
	if !regexp.MustCompile(`(?m)^0 +sample +not committed +` + job + ` +PENDING \(JobHeldUser\)! *$`).MatchString(status) {
		t.Errorf("status does not show the held sample job %s with its reason, flagged:\n%s", job, status)
	}
	if want := fmt.Sprintf("will not start: step 0 sample, job %s pending (JobHeldUser): held: release it with `scontrol release %s`", job, job); !strings.Contains(status, want) {
		t.Errorf("status does not say how to release the job: want %q in\n%s", want, status)
	}

	// A limit of the partition that sinfo's nodes do not show (MaxCPUsPerNode): the submission goes
	// through and Slurm keeps the job pending as PartitionConfig, which status flags.
	if c.CPUs < 2 {
		t.Skip("a node of one CPU leaves no smaller MaxCPUsPerNode to set")
	}
	if out, err := c.Command("scontrol", "update", "PartitionName="+c.Partition, fmt.Sprintf("MaxCPUsPerNode=%d", c.CPUs-1)).CombinedOutput(); err != nil {
		t.Fatalf("scontrol update: %v\n%s", err, out)
	}
	spadeOK(append(append([]string{"--run", "limit", "init"}, oneCPU...), "--set", fmt.Sprintf("slurm.sample.cpus=%d", c.CPUs))...)
	spadeOK("--run", "limit", "run", "--steps", "0", "--only", "sample", "--executor", "slurm")
	recs, err = cluster.Records(ctx, lk, "limit")
	if err != nil || len(recs) != 1 {
		t.Fatalf("records of the run over the partition's limit: %+v, %v", recs, err)
	}
	job = recs[0].Job
	pending := regexp.MustCompile(`(?m)^0 +sample +not committed +` + job + ` +PENDING \(PartitionConfig\)! *$`)
	waitFor(t, c, time.Minute, "job "+job+" pending as PartitionConfig in spade status", func() bool {
		status = spadeOK("--run", "limit", "status", "--steps", "0")
		return pending.MatchString(status)
	})
	if want := fmt.Sprintf("will not start: step 0 sample, job %s pending (PartitionConfig): its request exceeds a limit of its partition", job); !strings.Contains(status, want) {
		t.Errorf("status does not say what to change: want %q in\n%s", want, status)
	}
	t.Logf("status of the run over the partition's limit:\n%s", status)
}
