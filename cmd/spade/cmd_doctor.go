package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/spadekit/spade/internal/llm"
	"github.com/spadekit/spade/internal/sandbox"
)

// doctorOptions are the options of `spade doctor`.
type doctorOptions struct {
	globalOptions
	// Python is --python, the interpreter to probe ("" for sandbox.DefaultPython).
	Python string
	// Strict is --strict: fail unless bwrap works.
	Strict bool
	// LLM is --llm, a server's /v1 root to check instead of the sandbox; Model, Publish and APIKeyEnv
	// are --model, --publish and --api-key-env.
	LLM, Model, Publish, APIKeyEnv, Placement string
	// Preset is --preset: estimate the memory of this preset's trainer and servers instead of probing the
	// sandbox, on GPUs GPUs (--gpus) of GPUMemoryGiB each (--gpu-memory).
	Preset       string
	GPUs         int
	GPUMemoryGiB float64
}

func newDoctorCommand() *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "report the Python interpreter and the sandbox isolation this host provides",
		Description: `Resolves the interpreter ($SPADE_PYTHON, else python3 on PATH, through version-manager shims; when
that one lacks numpy and /usr/bin/python3 has it, /usr/bin/python3, as make does, with a line saying so),
probes each isolation layer by starting a real sandbox worker (bwrap, then the namespace init), says
which one is in force, and checks that numpy and sympy import inside the sandbox. Exits 1 when no
isolation layer works (generated code would then be refused without --unsafe-no-isolation), or, with
--strict, when the best layer is not bwrap. Every layer that fails, and a missing optional module, gets a
line saying what to set or install.

With --llm URL it checks a live inference server instead, one line per check with its fix: the models
it serves and whether it is vLLM or SGLang, whether a chat call returns the token ids and log-probs GRPO
trains on, whether it tokenizes text and conversations (token mode), whether its chat template keeps
the history (which token mode that implies), and whether the --publish endpoint exists; with
--placement colocated, whether it can release its GPU memory (SGLang's enable_memory_saver, vLLM's
sleep mode), without releasing it. Exits 1 when a check fails.

Example: spade doctor
         SPADE_PYTHON=/usr/bin/python3 spade doctor
With --preset P it estimates, for --gpus N GPUs of --gpu-memory GiB each, the peak memory per GPU of
the preset's trainer (weights, gradients, optimizer state, reference model, activations, logits; the
formula of docs/gpu.md) under its settings and the other grpo.param_dtype and grpo.cpu_offload values,
and of its SGLang servers (weights and KV cache per token), and says which settings fit on the node:
colocated (the servers release their memory while the trainer runs) or split in halves. Exits 1 when no
setting fits.

Example: spade doctor
         SPADE_PYTHON=/usr/bin/python3 spade doctor
         spade doctor --llm http://gpu1:30000/v1 --publish sglang --placement colocated
         spade doctor --preset qwen3-30b-a3b-games --gpus 8 --gpu-memory 80`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "python", EnvVars: []string{sandbox.PythonEnv}, Usage: "Python interpreter for the sandbox (default python3 on PATH, or /usr/bin/python3 when only that has numpy)"},
			&cli.BoolFlag{Name: "strict", Usage: "exit 1 unless bwrap, the strongest layer, works"},
			&cli.StringFlag{Name: "llm", Usage: "check the inference server at this OpenAI root (http://host:port/v1) instead of the sandbox"},
			&cli.StringFlag{Name: "model", Usage: "with --llm: the served model to call (default: the first listed)"},
			&cli.StringFlag{Name: "publish", Value: "sglang", Usage: "with --llm: the grpo.publish mode whose endpoint to probe: sglang, vllm_reload, lora or none"},
			&cli.StringFlag{Name: "api-key-env", Value: "OPENAI_API_KEY", Usage: "with --llm: the variable holding the API key"},
			&cli.StringFlag{Name: "placement", Value: "separate", Usage: "with --llm: the grpo.placement to check for: separate, or colocated (the server can release its GPU memory)"},
			&cli.StringFlag{Name: "preset", Usage: "estimate the trainer's and servers' GPU memory for this preset instead of probing the sandbox"},
			&cli.IntFlag{Name: "gpus", Value: 8, Usage: "with --preset: the GPUs of the node"},
			&cli.Float64Flag{Name: "gpu-memory", Value: 80, Usage: "with --preset: the memory of one GPU, in GiB"},
		},
		Action: func(c *cli.Context) error {
			opts := doctorOptions{globalOptions: globalsFrom(c), Python: c.String("python"), Strict: c.Bool("strict"),
				LLM: c.String("llm"), Model: c.String("model"), Publish: c.String("publish"), APIKeyEnv: c.String("api-key-env"),
				Placement: c.String("placement"), Preset: c.String("preset"), GPUs: c.Int("gpus"), GPUMemoryGiB: c.Float64("gpu-memory")}
			if opts.Preset != "" {
				return runDoctorMemory(opts)
			}
			if opts.LLM != "" {
				return runDoctorLLM(c.Context, opts)
			}
			return runDoctor(c.Context, opts)
		},
	}
}

// runDoctor probes the interpreter and every isolation layer and prints what works and how to fix what
// does not.
func runDoctor(ctx context.Context, opts doctorOptions) error {
	out := opts.Out
	probes, py, err := sandbox.ProbeIsolation(ctx, opts.Python)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "python:    %s -> %s (Python %s)\n", py.Requested, py.Executable, py.Version)
	fmt.Fprintln(out, "isolation:")
	var inForce *sandbox.Probe
	for i, p := range probes {
		verdict := "no"
		if p.OK {
			verdict = "ok"
			if inForce == nil {
				inForce = &probes[i]
			}
		}
		fmt.Fprintf(out, "  %-11s %-3s %6.1f ms  %s\n", p.Isolation, verdict, float64(p.Took.Microseconds())/1000, p.Detail)
		if !p.OK {
			fmt.Fprintf(out, "  %-11s     fix: %s\n", "", layerAdvice(p, py))
		}
	}
	if inForce == nil {
		fmt.Fprintln(out, "in force:  NONE: generated code is refused unless --unsafe-no-isolation is passed")
		if outsideUsr(py) {
			return fmt.Errorf("doctor: no isolation layer works with %s: try SPADE_PYTHON=%s (see the fix lines above)", py.Executable, systemPython)
		}
		return errors.New("doctor: no isolation layer works here: install bubblewrap (apt-get install -y bubblewrap) or allow unprivileged user namespaces (see the fix lines above)")
	}
	fmt.Fprintf(out, "in force:  %s (the first that works, in the order above)\n", inForce.Isolation)
	var strictErr error
	if inForce.Isolation != sandbox.IsolationBwrap && opts.Strict {
		strictErr = fmt.Errorf("doctor --strict: the best layer here is %s, not bwrap (see the fix line under bwrap)", inForce.Isolation)
	}
	fmt.Fprintf(out, "preloaded: %s\n", strings.Join(inForce.Modules, " "))
	pool, err := sandbox.NewPool(ctx, sandbox.Options{PythonExe: py, Isolation: inForce.Isolation, Workers: 1})
	if err != nil {
		return err
	}
	defer pool.Close()
	var optional, missing []string
	for _, module := range []string{"numpy", "sympy"} {
		prog, err := pool.Load(ctx, "import "+module+"\nclass Probe:\n    def reset(self, seed):\n        return ''\n    def step(self, action):\n        return '', 0.0, True, {}\n")
		if err != nil {
			optional = append(optional, module+" missing")
			missing = append(missing, module)
			continue
		}
		prog.Close()
		optional = append(optional, module+" ok")
	}
	fmt.Fprintf(out, "optional:  %s (numpy for environment programs, sympy for the math scorer)\n", strings.Join(optional, ", "))
	if len(missing) > 0 {
		fmt.Fprintf(out, "           fix: %s\n", moduleAdvice(missing, py))
	}
	return strictErr
}

// systemPython is the interpreter CI and the README use: Debian's, whose packages (python3-numpy, ...)
// the sandbox can see under /usr.
const systemPython = "/usr/bin/python3"

// outsideUsr reports whether the interpreter lives outside /usr (pyenv, conda, a venv in a home
// directory), where bwrap's read-only view (only /usr and the interpreter's prefix) and the sandbox's
// uid 65534 may not reach.
func outsideUsr(py *sandbox.Python) bool {
	return !strings.HasPrefix(py.Executable, "/usr/")
}

// layerAdvice is one line a user can act on for a layer that failed: which interpreter, which path, what
// to set or install.
func layerAdvice(p sandbox.Probe, py *sandbox.Python) string {
	d := strings.ToLower(p.Detail)
	userns := strings.Contains(d, "operation not permitted") || strings.Contains(d, "unshare") ||
		strings.Contains(d, "user namespace") || strings.Contains(d, "clone")
	unreadable := strings.Contains(d, "permission denied") || strings.Contains(d, "no such file")
	switch {
	case p.Isolation == sandbox.IsolationBwrap && (strings.Contains(d, "not found") || strings.Contains(d, "no bwrap")):
		return "install bubblewrap: apt-get install -y bubblewrap"
	case (unreadable || strings.Contains(d, "did not start")) && outsideUsr(py):
		return fmt.Sprintf("the sandbox runs as uid 65534 and sees only /usr and the interpreter's prefix read-only; %s (from %s) is outside /usr and not reachable there: use a system interpreter, SPADE_PYTHON=%s (apt-get install -y python3 python3-numpy python3-sympy), or let others read %s (chmod o+rx on it and its parents)",
			py.Executable, py.Requested, systemPython, filepath.Dir(py.Executable))
	case userns:
		return "unprivileged user namespaces are off: sysctl -w kernel.unprivileged_userns_clone=1 (Debian), or kernel.apparmor_restrict_unprivileged_userns=0 (Ubuntu 24.04+); in a container, run it with --security-opt seccomp=unconfined or give it user namespaces"
	case p.Isolation == sandbox.IsolationLandlock:
		return "needs a kernel >= 5.13 with landlock enabled (landlock in /sys/kernel/security/lsm; boot with lsm=...,landlock)"
	case outsideUsr(py):
		return fmt.Sprintf("%s (from %s) is outside /usr; try the system interpreter: SPADE_PYTHON=%s spade doctor", py.Executable, py.Requested, systemPython)
	}
	return "run with SPADE_PYTHON=" + systemPython + " and check the message above; spade doctor --help has the layers"
}

// moduleAdvice says how to make the missing optional modules importable by the sandbox's interpreter.
func moduleAdvice(missing []string, py *sandbox.Python) string {
	if !outsideUsr(py) {
		pkgs := make([]string, len(missing))
		for i, m := range missing {
			pkgs[i] = "python3-" + m
		}
		return fmt.Sprintf("apt-get install -y %s (for %s)", strings.Join(pkgs, " "), py.Executable)
	}
	return fmt.Sprintf("%s -m pip install %s, or use the system interpreter: SPADE_PYTHON=%s (apt-get install -y python3-numpy python3-sympy)",
		py.Executable, strings.Join(missing, " "), systemPython)
}

// runDoctorLLM checks a live inference server (llm.Diagnose) and prints one line per check, with the
// fix under a failed check or a note.
func runDoctorLLM(ctx context.Context, opts doctorOptions) error {
	out := opts.Out
	fmt.Fprintf(out, "llm:       %s\n", opts.LLM)
	failed := 0
	for _, f := range llm.Diagnose(ctx, llm.DiagnoseOptions{BaseURL: opts.LLM, Model: opts.Model, Publish: opts.Publish, APIKeyEnv: opts.APIKeyEnv, Placement: opts.Placement}) {
		verdict := "ok"
		if !f.OK {
			verdict, failed = "FAIL", failed+1
		}
		fmt.Fprintf(out, "  %-14s %-4s %s\n", f.Check, verdict, f.Detail)
		switch {
		case f.Fix != "" && f.OK:
			fmt.Fprintf(out, "  %-14s      note: %s\n", "", f.Fix)
		case f.Fix != "":
			fmt.Fprintf(out, "  %-14s      fix: %s\n", "", f.Fix)
		}
	}
	if failed > 0 {
		return fmt.Errorf("doctor --llm: %d check(s) failed at %s (see the fix lines above)", failed, opts.LLM)
	}
	return nil
}
