package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/slurm"
	"github.com/spadekit/spade/stages/stage"
)

// TestCheckFitNamesTheKey: against a 2-CPU default partition the default settings' 8-CPU rollout is
// refused in one line naming slurm.rollout.cpus, the node's 2 CPUs and the value that fits; memory,
// gres (and grpo's gres from grpo.trainer_gpus), an unknown partition and a request whose fields fit
// only separately are named the same way; a request that fits passes.
func TestCheckFitNamesTheKey(t *testing.T) {
	nodes, err := slurm.ParseNodes("n1|debug*|2|1991|(null)\nb1|big|64|256000|(null)\ng1|gpu|16|64000|gpu:4\n")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	if cfg.Slurm.Rollout.CPUs <= 2 {
		t.Fatalf("the default rollout asks %d CPUs; this test wants more than 2", cfg.Slurm.Rollout.CPUs)
	}
	set := func(kv ...string) *config.Config {
		c := config.Default()
		for i := 0; i < len(kv); i += 2 {
			if err := c.Set(kv[i], kv[i+1]); err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	for _, tc := range []struct {
		cfg   *config.Config
		stage stage.Name
		want  string // "" fits
	}{
		{cfg, stage.Rollout, "slurm.rollout.cpus 8 exceeds the largest node of partition debug (2 CPUs); init a run with --set slurm.rollout.cpus=2 or a larger slurm.rollout.partition (a run's settings are fixed at init; `spade init --from RUN@STEP --set ...` continues from a committed step)"},
		{cfg, stage.Sample, ""},
		{set("slurm.rollout.partition", "big"), stage.Rollout, ""},
		{set("slurm.gate.cpus", "1", "slurm.gate.mem", "4G"), stage.Gate, "slurm.gate.mem 4G exceeds the largest node of partition debug (1991M memory); init a run with --set slurm.gate.mem=1991M or"},
		{set("slurm.regret.gres", "gpu:1"), stage.Regret, "slurm.regret.gres gpu:1 exceeds the largest node of partition debug (no gpu); init a run with a smaller slurm.regret.gres or"},
		{set("slurm.grpo.partition", "gpu", "grpo.trainer", "torch", "grpo.trainer_gpus", "8"), stage.GRPO, "grpo.trainer_gpus 8 (slurm.grpo.gres gpu:8) exceeds the largest node of partition gpu (gpu:4); init a run with --set grpo.trainer_gpus=4 or"},
		{set("slurm.eval.partition", "gpus"), "eval", "slurm.eval.partition gpus: no such partition (sinfo lists big, debug, gpu); init a run with --set slurm.eval.partition=<one of them>"},
		{set("slurm.sample.args", "--cpus-per-task=3 --qos=high"), stage.Sample, "slurm.sample.args --cpus-per-task=3 --qos=high exceeds the largest node of partition debug (2 CPUs); init a run with a smaller slurm.sample.args or"},
		{set("slurm.rollout.args", "-p big"), stage.Rollout, ""},
		{set("slurm.rollout.partition", "gpu,big", "slurm.rollout.cpus", "32", "slurm.rollout.gres", "gpu:1"), stage.Rollout, "slurm.rollout asks 32 CPUs, gres gpu:1, which no single node of partitions gpu,big offers at once; init a run with smaller slurm.rollout.cpus, .mem or .gres or"},
	} {
		err := CheckFit(tc.cfg, []stage.Name{tc.stage}, nodes)
		var fe *FitError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want a fit", tc.stage, err)
		case tc.want == "":
		case !errors.As(err, &fe):
			t.Errorf("%s: %v, want a *FitError", tc.stage, err)
		case !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n"):
			t.Errorf("%s:\n got %s\nwant %s...", tc.stage, err, tc.want)
		}
	}
}

// TestPendingAdvice: a hold, a failed dependency, a partition limit and a wait for resources no node
// could give are flagged with what to change; a wait for resources a node has, or for a dependency,
// is not.
func TestPendingAdvice(t *testing.T) {
	nodes, err := slurm.ParseNodes("n1|debug*|2|1991|(null)\n")
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	for _, tc := range []struct {
		stage   stage.Name
		reason  string
		nodes   []slurm.Node
		contain string // "" not flagged
	}{
		{stage.Sample, "JobHeldUser", nodes, "scontrol release 41"},
		{stage.Sample, "JobHeldAdmin", nodes, "administrator"},
		{stage.Regret, "DependencyNeverSatisfied", nodes, "run the same `spade run --executor slurm` again"},
		{stage.Rollout, "PartitionConfig", nodes, "slurm.rollout.cpus 8 exceeds the largest node of partition debug (2 CPUs)"},
		{stage.Rollout, "PartitionConfig", nil, "slurm.rollout.*"},
		{stage.Rollout, "PartitionTimeLimit", nodes, "slurm.rollout.time"},
		{stage.Rollout, "QOSMaxCpuPerJobLimit", nodes, "per-job limit"},
		{stage.Rollout, "Resources", nodes, "no node can ever hold it: slurm.rollout.cpus 8"},
		{stage.Sample, "Resources", nodes, ""},
		{stage.Rollout, "Resources", nil, ""}, // sinfo unreachable: a wait may clear
		{stage.Rollout, "Dependency", nodes, ""},
		{stage.Rollout, "Priority", []slurm.Node{{Name: "b", Partition: "debug", Default: true, CPUs: 64, MemMB: 1 << 20}}, ""},
	} {
		got := pendingAdvice(cfg, tc.stage, "41_3", tc.reason, tc.nodes)
		if (tc.contain == "") != (got == "") || !strings.Contains(got, tc.contain) {
			t.Errorf("%s %s: %q, want %q", tc.stage, tc.reason, got, tc.contain)
		}
	}
}

// TestRequested: a CPU count, memory, gres or partition in a stage's extra sbatch arguments, in any of
// sbatch's spellings, replaces the setting's; other arguments change nothing.
func TestRequested(t *testing.T) {
	base := config.SlurmJob{CPUs: 8, Mem: "1G", Gres: "gpu:1", Partition: "a"}
	for args, want := range map[string]config.SlurmJob{
		"--cpus-per-task=3":          {CPUs: 3, Mem: "1G", Gres: "gpu:1", Partition: "a"},
		"--cpus-per-task 3":          {CPUs: 3, Mem: "1G", Gres: "gpu:1", Partition: "a"},
		"-c 3":                       {CPUs: 3, Mem: "1G", Gres: "gpu:1", Partition: "a"},
		"-c3":                        {CPUs: 3, Mem: "1G", Gres: "gpu:1", Partition: "a"},
		"--mem=4G --gres=gpu:2 -p b": {CPUs: 8, Mem: "4G", Gres: "gpu:2", Partition: "b"},
		"--partition=b,c --qos=high": {CPUs: 8, Mem: "1G", Gres: "gpu:1", Partition: "b,c"},
		"--constraint=a100":          base,
	} {
		job := base
		job.Args = args
		want.Args = args
		if got := requested(job); got != want {
			t.Errorf("%q: %+v, want %+v", args, got, want)
		}
	}
}
