package sandbox

import "time"

// Options configures a Pool. The zero value is usable: every zero field takes the default
// shown in its comment.
type Options struct {
	// Python is the interpreter setting ("" = DefaultPython: $SPADE_PYTHON, else python3 on PATH or Debian's).
	Python string
	// PythonExe is an already resolved interpreter; it wins over Python.
	PythonExe *Python
	// Isolation is the layer to use ("" = IsolationAuto).
	Isolation Isolation
	// AllowUnsafe permits IsolationNone (the CLI's --unsafe-no-isolation).
	AllowUnsafe bool
	// Workers is the most workers (sandboxes) alive at once (default 8). Each hosts one program.
	Workers int
	// FollowStep lets Pool.Fit raise Workers to the programs a step loads at once, when their estimated
	// memory fits the machine's (the default of stages/stage.SandboxOptions when sandbox.workers is 0).
	FollowStep bool
	// WorkerMemory is the estimated resident memory of one worker and its loaded program, bytes
	// (default 48 MiB); Pool.Fit checks it against the machine's.
	WorkerMemory int64
	// InstanceMemory is the estimated resident memory of one running env instance (a process forked
	// from the worker's template, sharing its pages until written), bytes (default 8 MiB).
	InstanceMemory int64
	// LoadTimeout bounds check, load and new-instance calls (default 10 s).
	LoadTimeout time.Duration
	// ResetTimeout bounds reset, tools and eval calls (default 10 s).
	ResetTimeout time.Duration
	// StepTimeout bounds step calls (default 5 s).
	StepTimeout time.Duration
	// StartTimeout bounds a worker's start, up to its hello (default 20 s).
	StartTimeout time.Duration
	// AddressSpace is RLIMIT_AS of each env process, bytes (default 1 GiB).
	AddressSpace int64
	// WorkerMemoryLimit bounds the memory of a worker's processes together, bytes (default 2 GiB;
	// negative: no bound): a program whose template, instances and their children hold more is ended
	// with a memory error, as one process past AddressSpace is (the worker's tree is read every 100 ms,
	// so a burst between two reads may pass the bound for that long; docs/sandbox.md).
	WorkerMemoryLimit int64
	// CPUSeconds is RLIMIT_CPU of each env process (default 60; the hard limit is one more).
	CPUSeconds int
	// OpenFiles is RLIMIT_NOFILE of each env process (default 32).
	OpenFiles int
	// FileSize is RLIMIT_FSIZE, bytes (default 16 MiB).
	FileSize int64
	// Processes is RLIMIT_NPROC inside a worker's user namespace (default 64): no fork or thread
	// bombs; the PID namespace holds the rest.
	Processes int
	// TmpBytes is the size of the worker's private /tmp (default 64 MiB), shared by the template and
	// the instances of the program the worker hosts (bwrap, namespaces; the landlock layer's work
	// directory is on the host's file system and has only ScratchBytes and FileSize).
	TmpBytes int64
	// ScratchBytes is the most each instance's own scratch directory may hold, bytes (default
	// 16 MiB; negative: no per-instance limit, only TmpBytes), and each template's after it loads.
	// Every file or directory counts at least 4 KiB (which bounds the number of files), and
	// RLIMIT_FSIZE is at most this. An instance over it gets a KindOutput error from the call that
	// wrote (its directory emptied, the instance killed; the worker is not tainted, its siblings go
	// on); opening a file for writing with the directory full raises in the program. The harness
	// keeps it on every layer, within the instance's own process (no layer lets the harness mount a
	// file system per instance): it holds between instances of one program, and TmpBytes stays the
	// backstop. Keep it at most TmpBytes divided by the instances a program runs at once.
	ScratchBytes int64
	// ObservationCap is the largest observation, bytes (default 64 KiB).
	ObservationCap int
	// InfoCap is the largest info dict of a step, and result of tools() or eval, as JSON bytes (default
	// 64 KiB). The instance checks it and Go checks it again on the bytes it received.
	InfoCap int
	// OutputCap is the most an env may print to stdout/stderr before it is killed (default 1 MiB).
	OutputCap int
	// ActionCap is the longest action accepted by Step, bytes (default 64 KiB).
	ActionCap int
	// FreshWorkers never reuses a worker after a program: each Load gets a worker that never ran
	// generated code (started in the background ahead of time). By default a worker is reused when
	// its server proves it clean, on layers with their own PID namespace (bwrap, namespaces).
	FreshWorkers bool
	// unhardened (tests only) runs without what the harness and pool do against attacks on other
	// programs (non-dumpable processes, per-instance landlock, one program per worker), so that
	// a test can show a hostile program reaching its goal before it shows it contained.
	unhardened bool
	// unsealed (tests only) keeps the hardening but not the harness's seal (harness_seal in
	// harness.py), to show what the seal alone stops.
	unsealed bool
	// harnessInfoCap (tests only) is the info cap the harness is told when it is not InfoCap, so that a
	// test can show Go's own check holding for a harness that was made to check less.
	harnessInfoCap int
	// memoryTick (tests only) replaces memoryTick, how often the watchdog reads a worker's memory, so
	// that a test can show the verdict without the watchdog's reads.
	memoryTick time.Duration
	// Preload lists the modules each worker imports before forking (default DefaultPreload).
	Preload []string
	// MaxTurns is passed to the env class as Cls(max_turns=MaxTurns), the authors' construction (a
	// class that refuses it is made as Cls() and its max_turns attribute, where it has one, set);
	// 0 makes every env as Cls().
	MaxTurns int
	// OwnMaxTurns makes an env as Cls() and keeps its own max_turns, capped at MaxTurns (Cls(max_turns=
	// MaxTurns) only when Cls() raises TypeError; rollout.turn_budget own).
	OwnMaxTurns bool
	// Inject maps the names bound in a program's module before it runs to "module" or
	// "module:attribute" (default DefaultInjections; an empty, non-nil map binds none). Only names the
	// program's text mentions are bound, and a module that is not installed is left out.
	Inject map[string]string
	// RepairFStrings repairs a program that does not parse the way the authors' loader does before the
	// static check and the load see it: on the line of each syntax error, a {...} whose content is not an
	// expression becomes {{...}} (the braces an f-string meant literally), up to 20 lines.
	RepairFStrings bool
}

// DefaultPreload is what a worker imports before it freezes its heap and starts forking.
var DefaultPreload = []string{
	"math", "random", "itertools", "collections", "re", "json", "fractions", "decimal", "heapq",
	"functools", "string", "statistics", "dataclasses", "typing", "enum", "copy", "bisect",
	"operator", "datetime", "time", "textwrap", "cmath", "numbers", "unicodedata", "difflib",
}

func (o *Options) fill() {
	if o.Isolation == "" {
		o.Isolation = IsolationAuto
	}
	setDefault(&o.Workers, 8)
	setDefault(&o.WorkerMemory, 48<<20)
	setDefault(&o.InstanceMemory, 8<<20)
	setDefault(&o.LoadTimeout, 10*time.Second)
	setDefault(&o.ResetTimeout, 10*time.Second)
	setDefault(&o.StepTimeout, 5*time.Second)
	setDefault(&o.StartTimeout, 20*time.Second)
	setDefault(&o.AddressSpace, 1<<30)
	setDefault(&o.WorkerMemoryLimit, 2<<30)
	setDefault(&o.CPUSeconds, 60)
	setDefault(&o.OpenFiles, 32)
	setDefault(&o.FileSize, 16<<20)
	setDefault(&o.Processes, 64)
	setDefault(&o.TmpBytes, 64<<20)
	setDefault(&o.ScratchBytes, 16<<20)
	setDefault(&o.ObservationCap, 64<<10)
	setDefault(&o.InfoCap, 64<<10)
	setDefault(&o.OutputCap, 1<<20)
	setDefault(&o.ActionCap, 64<<10)
	if o.Preload == nil {
		o.Preload = DefaultPreload
	}
	if o.Inject == nil {
		o.Inject = DefaultInjections
	}
}

func setDefault[T comparable](field *T, value T) {
	var zero T
	if *field == zero {
		*field = value
	}
}
