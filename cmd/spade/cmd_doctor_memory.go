package main

import (
	"fmt"

	"github.com/spadekit/spade/internal/config"
	"github.com/spadekit/spade/stages/grpo"
)

// serverMemFraction is the share of a GPU an SGLang server takes for weights and KV cache when it runs
// beside nothing (the authors' --sglang-mem-fraction-static 0.7).
const serverMemFraction = 0.7

// trainerHeadroom is the share of a GPU the trainer's estimate may fill: the rest is the CUDA context,
// the allocator's fragmentation and NCCL buffers.
const trainerHeadroom = 0.9

// runDoctorMemory prints the memory estimate of opts.Preset on opts.GPUs GPUs of opts.GPUMemoryGiB.
func runDoctorMemory(opts doctorOptions) error {
	out := opts.Out
	if opts.GPUs < 1 || !(opts.GPUMemoryGiB > 0) {
		return usageError("--gpus must be >= 1 and --gpu-memory > 0, got %d and %g", opts.GPUs, opts.GPUMemoryGiB)
	}
	cfg, err := config.Preset(opts.Preset)
	if err != nil {
		return asUsage(err)
	}
	shape, err := grpo.PresetShape(opts.Preset)
	if err != nil {
		return asUsage(err)
	}
	gib := func(b int64) float64 { return float64(b) / (1 << 30) }
	gpu := opts.GPUMemoryGiB * (1 << 30)
	fmt.Fprintf(out, "memory:    %s: %s, %.2fB parameters; %d GPUs of %.0f GiB (estimates: docs/gpu.md)\n",
		opts.Preset, shape.Name, float64(shape.Params())/1e9, opts.GPUs, opts.GPUMemoryGiB)

	server := grpo.EstimateServerMemory(shape, opts.GPUs)
	kvTokens := (serverMemFraction*gpu - float64(server.Weights)) / float64(server.KVPerToken)
	fmt.Fprintf(out, "servers:   tp %d: weights %.1f GiB per GPU, KV %.1f KiB per token per GPU; at mem_fraction_static %.1f, %.0fk tokens of KV cache\n",
		opts.GPUs, gib(server.Weights), float64(server.KVPerToken)/1024, serverMemFraction, max(0, kvTokens)/1e3)

	type option struct {
		dtype   config.ParamDType
		offload config.CPUOffload
	}
	preset := option{cfg.GRPO.ParamDType, cfg.GRPO.CPUOffload}
	options := []option{preset}
	for _, d := range config.ParamDTypeValues() {
		for _, o := range config.CPUOffloadValues() {
			if (option{d, o}) != preset && !(d == config.ParamFloat32 && o == config.OffloadOptimizerParams) {
				options = append(options, option{d, o})
			}
		}
	}
	fmt.Fprintf(out, "trainer:   per GPU, micro-batch %d tokens, activation checkpointing %v, reference %v (GiB)\n",
		cfg.GRPO.MicroBatchTokens, cfg.GRPO.GradientCheckpointing, cfg.GRPO.KLBeta > 0)
	fmt.Fprintf(out, "  %-9s %-16s %5s %8s %8s %6s %6s %7s %8s %8s  %-9s %s\n", "dtype", "cpu_offload", "GPUs", "weights", "grads",
		"optim", "ref", "activ", "logits", "= GPU", "host", "fits")
	fits := 0
	for _, o := range options {
		for _, n := range []int{opts.GPUs, max(1, opts.GPUs/2)} {
			if o.offload == config.OffloadOptimizerParams && n < 2 {
				continue
			}
			s := grpo.TrainerMemorySettingsOf(cfg)
			s.GPUs, s.ParamDType, s.CPUOffload = n, o.dtype, o.offload
			e := grpo.EstimateTrainerMemory(shape, s)
			where := "colocated"
			if n != opts.GPUs {
				where = "halves"
			}
			verdict := "no"
			if float64(e.Device()) <= trainerHeadroom*gpu {
				verdict, fits = "yes ("+where+")", fits+1
			}
			mark := ""
			if o == preset && n == opts.GPUs {
				mark = "  <- the preset"
			}
			fmt.Fprintf(out, "  %-9s %-16s %5d %8.1f %8.1f %6.1f %6.1f %7.1f %8.1f %8.1f  %-9.1f %s%s\n", o.dtype, o.offload, n,
				gib(e.Weights), gib(e.Gradients), gib(e.Optimizer), gib(e.Reference), gib(e.Activations), gib(e.Logits),
				gib(e.Device()), gib(e.Host*int64(n)), verdict, mark)
		}
	}
	fmt.Fprintln(out, "  colocated: the trainer on every GPU while the servers have released theirs (grpo.placement colocated);")
	fmt.Fprintln(out, "  halves: the trainer on half the GPUs, the servers on the rest (grpo.placement separate).")
	fmt.Fprintln(out, "  host: the node's host memory the offloaded state takes, every trainer process together.")
	if fits == 0 {
		return fmt.Errorf("doctor --preset: no trainer setting fits %s on %d GPUs of %.0f GiB: more GPUs, or a smaller grpo.micro_batch_tokens", opts.Preset, opts.GPUs, opts.GPUMemoryGiB)
	}
	return nil
}
