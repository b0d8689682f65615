package config

import (
	"strings"
	"unicode"
)

// Slurm is how `spade run --executor slurm` asks Slurm for each stage's jobs: one set of resources per
// stage (docs/many-machines.md, "Slurm"), where the job logs go, and the command that runs spade on
// the compute nodes. Other executors ignore it.
type Slurm struct {
	// Sample is the resources of each sample job.
	Sample SlurmJob `json:"sample"`
	// Pool is the resources of each pool job (a run on an imported pool).
	Pool SlurmJob `json:"pool"`
	// Generate is the resources of each generate job: the Designer's calls, bounded by llm.max_in_flight.
	Generate SlurmJob `json:"generate"`
	// Gate is the resources of each task of the gate's job arrays (the sandbox runs the candidates there).
	Gate SlurmJob `json:"gate"`
	// Rollout is the resources of each task of the rollout's job arrays (the sandbox runs the envs there).
	Rollout SlurmJob `json:"rollout"`
	// Regret is the resources of each regret job.
	Regret SlurmJob `json:"regret"`
	// GRPO is the resources of each grpo job. With grpo.trainer = torch and slurm.grpo.gres empty the job
	// asks for gpu:grpo.trainer_gpus, the trainer's GPUs.
	GRPO SlurmJob `json:"grpo"`
	// Eval is the resources of each task of the evaluation's job arrays.
	Eval SlurmJob `json:"eval"`
	// LogDir is the directory the jobs write their logs to (one file per job or array task); it must be
	// reachable from the compute nodes at the same path. Empty: spade-logs/RUN under the directory
	// `spade run` is started in.
	LogDir string `json:"log_dir"`
	// Command runs spade on the compute nodes, split at spaces (for example "apptainer exec spade.sif
	// spade"). Empty: the absolute path of the spade that submits, so the nodes need the same file.
	Command string `json:"command"`
}

// SlurmJob is the resources one stage's jobs ask Slurm for. Empty strings leave the cluster's default.
type SlurmJob struct {
	// CPUs is the job's (or each array task's) --cpus-per-task.
	CPUs int `json:"cpus" range:">=1"`
	// Mem is the job's --mem, in Slurm's notation (16G, 4096M); empty: the partition's default.
	Mem string `json:"mem"`
	// Gres is the job's --gres (gpu:8); empty: none.
	Gres string `json:"gres"`
	// Partition is the job's --partition; empty: the cluster's default partition.
	Partition string `json:"partition"`
	// Time is the job's --time limit (HH:MM:SS, D-HH:MM:SS, minutes); empty: the partition's limit.
	Time string `json:"time"`
	// Account is the job's --account; empty: the user's default account.
	Account string `json:"account"`
	// Args are further sbatch arguments, split at spaces (for example "--qos=high --constraint=a100").
	Args string `json:"args"`
}

// SplitArgs returns the words of an arguments setting (slurm.<stage>.args, slurm.command), split at
// runs of white space; quoting is not interpreted.
func SplitArgs(value string) []string { return strings.FieldsFunc(value, unicode.IsSpace) }

// ownedSbatchFlags are the sbatch flags spade sets for every job (the array, the dependencies, the log,
// the name, the parsable output, the script).
var ownedSbatchFlags = []string{"--array", "-a", "--dependency", "-d", "--output", "-o", "--error", "-e", "--parsable", "--wrap", "--job-name", "-J"}

// validate checks that no extra sbatch argument takes over what spade decides for every job.
func (s Slurm) validate(*Config) error {
	for name, job := range map[string]SlurmJob{"sample": s.Sample, "pool": s.Pool, "generate": s.Generate, "gate": s.Gate,
		"rollout": s.Rollout, "regret": s.Regret, "grpo": s.GRPO, "eval": s.Eval} {
		for _, arg := range SplitArgs(job.Args) {
			for _, flag := range ownedSbatchFlags {
				// A long flag alone or with =value; a short one alone or with its value attached (-o/tmp/x).
				if arg == flag || strings.HasPrefix(arg, flag+"=") || (len(flag) == 2 && strings.HasPrefix(arg, flag)) {
					return invalidf("config: key \"slurm.%s.args\" sets %s, which spade sets for every job; leave it out", name, flag)
				}
			}
		}
	}
	return nil
}

// presetSlurm asks for the CPUs each stage keeps busy: the sandbox's workers for the gate, the rollout
// and the evaluation, a few for the Designer's calls and the scoring, and for grpo the trainer's GPUs
// (gres derived from grpo.trainer_gpus) and CPUs to feed them.
func presetSlurm(presetSpec) Slurm {
	small := SlurmJob{CPUs: 1}
	return Slurm{Sample: small, Pool: small, Generate: SlurmJob{CPUs: 2}, Gate: SlurmJob{CPUs: 8},
		Rollout: SlurmJob{CPUs: 8}, Regret: SlurmJob{CPUs: 2}, GRPO: SlurmJob{CPUs: 8}, Eval: SlurmJob{CPUs: 8}}
}
