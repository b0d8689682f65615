package cluster

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/internal/slurm"
	"github.com/spadekit/spade/stages/stage"
)

// FitError is a stage's request that no node of its partition could ever hold: Slurm would keep its
// jobs pending for good. Its message is one line naming the setting, what the largest node offers and
// what to do.
type FitError struct {
	// Stage is the stage; Key the setting at fault (slurm.rollout.cpus, or slurm.grpo for a request whose
	// fields fit separately but on no node at once).
	Stage stage.Name
	Key   string
	// Want is the value asked; Shortfall what the partition offers.
	Want      string
	Shortfall slurm.Shortfall
}

// Error is the one-line refusal: the key, its value, what the largest node offers, and what to do.
func (e *FitError) Error() string {
	sf := e.Shortfall
	where := "partition " + strings.Join(sf.Partitions, ",")
	if len(sf.Partitions) > 1 {
		where = "partitions " + strings.Join(sf.Partitions, ",")
	}
	fix := "init a run with a smaller " + e.Key
	if sf.Suggest != "" {
		fix = "init a run with --set " + e.Key + "=" + sf.Suggest
	}
	fix += " or a larger slurm." + string(e.Stage) + ".partition (a run's settings are fixed at init; `spade init --from RUN@STEP --set ...` continues from a committed step)"
	switch sf.Field {
	case "partition":
		return fmt.Sprintf("%s %s: no such partition (sinfo lists %s); init a run with --set %s=<one of them> (a run's settings are fixed at init; `spade init --from RUN@STEP --set ...` continues from a committed step)",
			e.Key, e.Want, sf.Offer, e.Key)
	case "":
		return fmt.Sprintf("%s asks %s, which no single node of %s offers at once; %s", e.Key, e.Want, where,
			strings.Replace(fix, "a smaller "+e.Key, "smaller "+e.Key+".cpus, .mem or .gres", 1))
	}
	return fmt.Sprintf("%s %s exceeds the largest node of %s (%s); %s", e.Key, e.Want, where, sf.Offer, fix)
}

// CheckFit compares the request of each named stage (Resources) with nodes and returns a *FitError for
// the first one no node could ever hold, nil when every one fits some node.
func CheckFit(cfg *config.Config, names []stage.Name, nodes []slurm.Node) error {
	for _, name := range names {
		if err := checkStageFit(cfg, name, nodes); err != nil {
			return err
		}
	}
	return nil
}

func checkStageFit(cfg *config.Config, name stage.Name, nodes []slurm.Node) error {
	setting := Resources(cfg, name)
	job := requested(setting)
	cpus := max(job.CPUs, 1)
	sf, err := slurm.Fit(nodes, slurm.Request{CPUs: cpus, Mem: job.Mem, Gres: job.Gres, Partition: job.Partition})
	if err != nil {
		return fmt.Errorf("cluster: slurm.%s: %w", name, err)
	}
	if sf == nil {
		return nil
	}
	prefix := "slurm." + string(name)
	e := &FitError{Stage: name, Key: prefix + "." + sf.Field, Shortfall: *sf}
	switch sf.Field {
	case "cpus":
		e.Want = strconv.Itoa(cpus)
	case "mem":
		e.Want = job.Mem
	case "gres":
		e.Want = job.Gres
		if name == stage.GRPO && cfg.Slurm.GRPO.Gres == "" {
			e.Key = "grpo.trainer_gpus"
			e.Want = strconv.Itoa(cfg.GRPO.TrainerGPUs) + " (slurm.grpo.gres " + job.Gres + ")"
			if n, ok := strings.CutPrefix(sf.Suggest, "gpu:"); ok {
				sf.Suggest = n
				e.Shortfall.Suggest = n
			}
		}
	case "partition":
		e.Want = job.Partition
	case "":
		e.Key = prefix
		e.Want = fmt.Sprintf("%d CPUs", cpus)
		if job.Mem != "" {
			e.Want += ", mem " + job.Mem
		}
		if job.Gres != "" {
			e.Want += ", gres " + job.Gres
		}
	}
	overridden := map[string]bool{"cpus": job.CPUs != setting.CPUs, "mem": job.Mem != setting.Mem,
		"gres": job.Gres != setting.Gres, "partition": job.Partition != setting.Partition}
	if overridden[sf.Field] {
		// The value comes from the stage's extra sbatch arguments.
		e.Key, e.Want, e.Shortfall.Suggest = prefix+".args", job.Args, ""
	}
	return e
}

// pendingAdvice says, for a pending task whose reason will not clear by itself, why it will not start
// and what to change; "" for a reason that may clear. nodes (nil: sinfo was not reachable) tell a wait
// for nodes that no node could ever end from one that will.
func pendingAdvice(cfg *config.Config, name stage.Name, job, reason string, nodes []slurm.Node) string {
	key := "slurm." + string(name)
	switch {
	case reason == "DependencyNeverSatisfied":
		return "a job it waits for failed: run the same `spade run --executor slurm` again (it cancels this job and submits the work again)"
	case reason == "JobHeldUser":
		return "held: release it with `scontrol release " + jobOf(job) + "`"
	case reason == "JobHeldAdmin":
		return "held by an administrator: ask them to release job " + jobOf(job)
	case reason == "PartitionConfig":
		if nodes != nil {
			if err := checkStageFit(cfg, name, nodes); err != nil {
				return err.Error()
			}
		}
		return "its request exceeds a limit of its partition (MaxCPUsPerNode, MaxMemPerNode, ...: `scontrol show partition`) or is one the partition refuses: init a run with smaller " + key + ".* settings or another " + key + ".partition"
	case reason == "PartitionTimeLimit":
		return key + ".time exceeds the partition's time limit: init a run with a shorter one"
	case reason == "BadConstraints":
		return "no node has the constraints of " + key + ".args: init a run without them"
	case reason == "InvalidAccount":
		return key + ".account is not an account of yours: init a run with another"
	case reason == "InvalidQOS":
		return "the job's QOS (" + key + ".args) is invalid: init a run with another"
	case slurm.NeverClears(reason):
		return "the job asks more than a per-job limit of its account or QOS allows: init a run with smaller " + key + ".* settings"
	case slurm.MayWaitForNodes(reason) && nodes != nil:
		if err := checkStageFit(cfg, name, nodes); err != nil {
			return "no node can ever hold it: " + err.Error()
		}
	}
	return ""
}

// requested is job as sbatch reads it: a CPU count, memory, gres or partition given again in its args
// (which come last, so sbatch takes them) replaces the setting's.
func requested(job config.SlurmJob) config.SlurmJob {
	words := config.SplitArgs(job.Args)
	for i, w := range words {
		flag, value, hasValue := strings.Cut(w, "=")
		if !hasValue && i+1 < len(words) && !strings.HasPrefix(words[i+1], "-") {
			value = words[i+1]
		}
		switch {
		case flag == "--cpus-per-task" || flag == "-c":
			if n, err := strconv.Atoi(value); err == nil {
				job.CPUs = n
			}
		case len(flag) > 2 && strings.HasPrefix(flag, "-c") && !strings.HasPrefix(flag, "--"):
			if n, err := strconv.Atoi(flag[2:]); err == nil {
				job.CPUs = n
			}
		case flag == "--mem":
			job.Mem = value
		case flag == "--gres":
			job.Gres = value
		case flag == "--partition" || flag == "-p":
			job.Partition = value
		}
	}
	return job
}
