package grpo

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spadekit/spade/internal/config"
)

func TestPresetShapesHaveTheirModelsParameters(t *testing.T) {
	// Qwen3-8B by hand: layer 2·4096·4096 + 2·4096·1024 + 3·4096·12288 = 192,937,984; × 36 layers plus
	// untied embeddings 2·151936·4096.
	if got, want := PresetShapes["qwen3-8b"].Params(), int64(36*192_937_984+2*151936*4096); got != want {
		t.Fatalf("qwen3-8b: %d parameters, want %d", got, want)
	}
	for size, billions := range map[string]float64{"qwen3-4b": 4.02, "qwen3-8b": 8.19, "qwen3-30b-a3b": 30.5} {
		if got := float64(PresetShapes[size].Params()) / 1e9; math.Abs(got-billions) > 0.05 {
			t.Errorf("%s: %.3fB parameters, the model card says %.2fB", size, got, billions)
		}
	}
	if _, err := PresetShape("qwen3-8b-games"); err != nil {
		t.Fatal(err)
	}
	if _, err := PresetShape("llama-games"); err == nil || !strings.Contains(err.Error(), "qwen3-8b") {
		t.Fatalf("unknown preset: %v", err)
	}
}

func TestEstimateTrainerMemoryByHand(t *testing.T) {
	// P = 2·(1·1·... ): one layer of H 4, heads 1 × d 4, kv 1 × d 4, I 8: 4·16 + 3·4·8 = 160; V 10 untied:
	// 80; P = 240.
	m := ModelShape{Layers: 1, Hidden: 4, Intermediate: 8, Heads: 1, KVHeads: 1, HeadDim: 4, Vocab: 10}
	if m.Params() != 240 {
		t.Fatalf("P = %d, want 240", m.Params())
	}
	s := TrainerMemorySettings{GPUs: 2, ParamDType: config.ParamBFloat16, CPUOffload: config.OffloadOptimizer,
		GradientCheckpointing: true, Reference: true, MicroBatchTokens: 6, ActivationBytes: 2}
	e := EstimateTrainerMemory(m, s)
	// weights 240·2/2 + 2 gathered layers 2·160·2; grads 240; optimizer (8+4)·240/2 = 1440 on the host;
	// reference 240; activations 1·6·4·2 + 6·(40 + 24)·2 = 816; logits 6·10·2 = 120.
	want := TrainerMemory{Weights: 240 + 640, Gradients: 240, Host: 1440, Reference: 240, Activations: 48 + 768, Logits: 120}
	if e != want {
		t.Fatalf("estimate %+v, want %+v", e, want)
	}
	if e.Device() != 880+240+240+816+120 {
		t.Fatalf("device %d", e.Device())
	}
	s.CPUOffload = config.OffloadNone
	if e := EstimateTrainerMemory(m, s); e.Optimizer != 1440 || e.Host != 0 {
		t.Fatalf("optimizer on the device: %+v", e)
	}
	s.CPUOffload, s.ParamDType = config.OffloadOptimizerParams, config.ParamFloat32
	if e := EstimateTrainerMemory(m, s); e.Weights != 640 || e.Gradients != 0 || e.Host != 8*240/2+2*240*4/2 || e.Reference != 480 {
		t.Fatalf("parameters offloaded: %+v", e)
	}
	// The server: bf16 weights over 2 GPUs, and 2·L·kv·d·2/TP bytes of KV per token.
	if sm := EstimateServerMemory(m, 2); sm.Weights != 240 || sm.KVPerToken != 8 {
		t.Fatalf("server %+v", sm)
	}
}

// TestEstimateTrainerMemoryMatchesTheCPUTrainer runs one float32 update of a 35M-parameter tiny decoder
// on the CPU and compares its peak resident memory, less the interpreter's own (Python, torch and the
// trainer's modules imported), with the estimate.
func TestEstimateTrainerMemoryMatchesTheCPUTrainer(t *testing.T) {
	python := trainerPython(t)
	t.Setenv("CUDA_VISIBLE_DEVICES", "")
	root := t.TempDir()
	cfg := torchConfig(t, python, root)
	// The tiny decoder's MLP has two matrices: width 3072 has the parameters of a three-matrix MLP of
	// width 2048, the shape the estimate counts.
	tiny := `{"vocab_size": 1024, "hidden_size": 512, "num_layers": 8, "num_heads": 8, "intermediate_size": 3072, "max_positions": 64}`
	if err := os.WriteFile(filepath.Join(cfg.GRPO.ModelPath, "spade_tiny.json"), []byte(tiny), 0o644); err != nil {
		t.Fatal(err)
	}
	shape := ModelShape{Layers: 8, Hidden: 512, Intermediate: 2048, Heads: 8, KVHeads: 8, HeadDim: 64, Vocab: 1024}
	cfg.GRPO.KLBeta, cfg.GRPO.Publish = 0, config.PublishNone
	work := filepath.Join(root, "work")
	var log bytes.Buffer
	tr, err := NewTrainer(TrainerOptions{Config: cfg, Run: "mem", WorkDir: work, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Train(context.Background(), 1, sampleRows(1, 4, 0)); err != nil {
		t.Fatalf("train: %v\nlog:\n%s", err, log.String())
	}
	peak := readUpdatePerformance(t, work, 1).PeakMemoryBytes
	script := `import resource, torch, numpy
import spade_trainer.train
x = torch.randn(64, 64, requires_grad=True); (x @ x).sum().backward()
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)`
	cmd := exec.Command(python, "-c", script)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(work, "step=000001", "py"))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("baseline: %v", err)
	}
	baseline, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	est := EstimateTrainerMemory(shape, TrainerMemorySettings{GPUs: 1, ParamDType: config.ParamFloat32, CPUOffload: config.OffloadNone,
		MicroBatchTokens: cfg.GRPO.MicroBatchTokens, ActivationBytes: 4}).Device()
	measured := peak - baseline
	t.Logf("CPU trainer: peak %d MiB, interpreter %d MiB, measured %d MiB, estimate %d MiB", peak>>20, baseline>>20, measured>>20, est>>20)
	if rel := math.Abs(float64(measured-est)) / float64(est); rel > 0.2 {
		t.Fatalf("measured %d MiB against an estimate of %d MiB: off by %.0f%% (> 20%%)", measured>>20, est>>20, 100*rel)
	}
}

// TestGPUCheckPrintsTheDoctorsEstimate: gpu_check.py's estimate for its Qwen3-8B update (one GPU,
// bfloat16, the optimizer in host memory, checkpointing, the reference) is EstimateTrainerMemory's.
func TestGPUCheckPrintsTheDoctorsEstimate(t *testing.T) {
	python := trainerPython(t)
	script := `import json, sys; sys.path.insert(0, sys.argv[1]); import gpu_check
print(json.dumps(gpu_check.estimate_trainer_bytes(gpu_check.QWEN3_8B, 16384, reference=True)))`
	dir, err := filepath.Abs("trainer")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(python, "-c", script, dir).Output()
	if err != nil {
		t.Fatalf("gpu_check: %v", err)
	}
	var py map[string]int64
	if err := json.Unmarshal(out, &py); err != nil {
		t.Fatalf("%s: %v", out, err)
	}
	est := EstimateTrainerMemory(PresetShapes["qwen3-8b"], TrainerMemorySettings{GPUs: 1, ParamDType: config.ParamBFloat16,
		CPUOffload: config.OffloadOptimizer, GradientCheckpointing: true, Reference: true, MicroBatchTokens: 16384, ActivationBytes: 2})
	if py["device"] != est.Device() || py["host"] != est.Host || py["params"] != PresetShapes["qwen3-8b"].Params() {
		t.Fatalf("gpu_check estimates %v, EstimateTrainerMemory %+v (device %d)", py, est, est.Device())
	}
}
