package config

// Sandbox configures the execution of generated programs (internal/sandbox, through
// stages/stage.SandboxOptions): the gate, rollout, evaluation and `spade env` run every env program in a
// sandbox worker with these limits.
type Sandbox struct {
	// Python is the interpreter that runs the env programs; empty takes $SPADE_PYTHON, else the first
	// python3 on PATH, or /usr/bin/python3 when only that has numpy (spade logs the choice).
	Python string `json:"python"`
	// Workers is the most sandbox workers alive at once. Each worker hosts one program, so with a set
	// number the envs of a step play in waves of that many; 0 gives each step a worker per env (every
	// play of the step at once) when their estimated memory (48 MiB a worker and 8 MiB a play) fits the
	// machine's available memory, and stops with a message naming this key when it does not.
	Workers int `json:"workers" range:">=0"`
	// LoadTimeoutSeconds bounds a program's load, new instance and reset, in seconds. A program that
	// overruns it ends its episode with ended_by timeout.
	LoadTimeoutSeconds int `json:"load_timeout_seconds" range:">0"`
	// StepTimeoutSeconds bounds one step call, in seconds. An overrun ends the episode with ended_by
	// timeout and drops the env for the rest of its pool (the authors' orchestrator alarm, 30).
	StepTimeoutSeconds int `json:"step_timeout_seconds" range:">0"`
	// MemoryMB is the address-space limit (RLIMIT_AS) of each env process, in MiB.
	MemoryMB int `json:"memory_mb" range:">=1"`
	// WorkerMemoryMB bounds the memory that one program's processes hold together (its template, every
	// instance and their children), in MiB; past it the program's calls end with a memory error and its
	// worker is replaced. 0 means no bound beyond memory_mb per process.
	WorkerMemoryMB int `json:"worker_memory_mb" range:">=0"`
	// MaxObservationBytes is the largest observation a step may return, in bytes. A larger one ends the
	// episode with ended_by env_error.
	MaxObservationBytes int `json:"max_observation_bytes" range:">=1"`
	// RepairFStrings repairs a program that does not parse before it is checked and loaded, as the
	// authors' loader does: on the line of each syntax error, every {...} whose content is not a Python
	// expression becomes {{...}} (braces an f-string meant literally), up to 20 lines. Off, such a program
	// fails the static check with its syntax error.
	RepairFStrings bool `json:"repair_fstrings"`
	// UnsafeNoIsolation runs the programs unconfined on a host without isolation, with a loud warning.
	// The generated code can then read your files and secrets; off, such a host refuses to run them.
	UnsafeNoIsolation bool `json:"unsafe_no_isolation"`
}

// validate has no rule beyond the declared ranges.
func (Sandbox) validate(*Config) error { return nil }

// presetSandbox is the sandbox of every preset: the authors' 30 s alarm to load and reset at play and for
// each step, their f-string repair, 1 GiB of address space per process and 2 GiB per program, 64 KiB
// observations, workers following the step.
func presetSandbox(presetSpec) Sandbox {
	return Sandbox{Workers: 0, LoadTimeoutSeconds: 30, StepTimeoutSeconds: 30, MemoryMB: 1024, WorkerMemoryMB: 2048, MaxObservationBytes: 65536,
		RepairFStrings: true}
}
