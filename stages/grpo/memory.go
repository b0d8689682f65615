package grpo

import (
	"fmt"
	"strings"

	"github.com/spadekit/spade/internal/config"
)

// ModelShape is what the memory estimate needs of a decoder: its sizes as in its Hugging Face config.
type ModelShape struct {
	// Name labels the shape in reports.
	Name string
	// Layers, Hidden, Intermediate (the dense MLP's, or one expert's), Heads, KVHeads, HeadDim and Vocab
	// are the config's num_hidden_layers, hidden_size, intermediate_size (moe_intermediate_size),
	// num_attention_heads, num_key_value_heads, head_dim and vocab_size.
	Layers, Hidden, Intermediate, Heads, KVHeads, HeadDim, Vocab int
	// Experts and ExpertsPerToken are a mixture-of-experts layer's num_experts and num_experts_per_tok;
	// 0 for a dense MLP.
	Experts, ExpertsPerToken int
	// TiedEmbeddings is tie_word_embeddings: the output projection is the input embedding.
	TiedEmbeddings bool
}

// PresetShapes are the preset sizes' models (their config.json).
var PresetShapes = map[string]ModelShape{
	"qwen3-4b": {Name: "Qwen3-4B-Instruct-2507", Layers: 36, Hidden: 2560, Intermediate: 9728, Heads: 32, KVHeads: 8,
		HeadDim: 128, Vocab: 151936, TiedEmbeddings: true},
	"qwen3-8b": {Name: "Qwen3-8B", Layers: 36, Hidden: 4096, Intermediate: 12288, Heads: 32, KVHeads: 8, HeadDim: 128,
		Vocab: 151936},
	"qwen3-30b-a3b": {Name: "Qwen3-30B-A3B-Instruct-2507", Layers: 48, Hidden: 2048, Intermediate: 768, Heads: 32,
		KVHeads: 4, HeadDim: 128, Vocab: 151936, Experts: 128, ExpertsPerToken: 8},
}

// PresetShape returns the model shape of a preset name (its size prefix), or an error listing the sizes.
func PresetShape(preset string) (ModelShape, error) {
	for size, shape := range PresetShapes {
		if strings.HasPrefix(preset, size+"-") {
			return shape, nil
		}
	}
	return ModelShape{}, fmt.Errorf("no model shape for preset %q (sizes: qwen3-4b, qwen3-8b, qwen3-30b-a3b)", preset)
}

// LayerParams is one decoder layer's parameters:
//
//	attention = H·(heads·d) + 2·H·(kv·d) + (heads·d)·H
//	mlp       = 3·H·I                      (dense: gate, up, down)
//	          = E·3·H·I + H·E              (experts and router)
func (m ModelShape) LayerParams() int64 {
	h, q, kv := int64(m.Hidden), int64(m.Heads*m.HeadDim), int64(m.KVHeads*m.HeadDim)
	attention := h*q + 2*h*kv + q*h
	if m.Experts > 0 {
		return attention + int64(m.Experts)*3*h*int64(m.Intermediate) + h*int64(m.Experts)
	}
	return attention + 3*h*int64(m.Intermediate)
}

// Params is the model's parameters: P = L·layer + V·H·(1 if tied, else 2) (norms left out).
func (m ModelShape) Params() int64 {
	embeddings := int64(m.Vocab) * int64(m.Hidden)
	if !m.TiedEmbeddings {
		embeddings *= 2
	}
	return int64(m.Layers)*m.LayerParams() + embeddings
}

// TrainerMemorySettings are the trainer settings the estimate depends on.
type TrainerMemorySettings struct {
	// GPUs is grpo.trainer_gpus: the FSDP shards.
	GPUs int
	// ParamDType, CPUOffload and GradientCheckpointing are the grpo keys of the same names.
	ParamDType            config.ParamDType
	CPUOffload            config.CPUOffload
	GradientCheckpointing bool
	// Reference is whether a reference model is loaded (grpo.kl_beta > 0, full fine-tuning).
	Reference bool
	// MicroBatchTokens is grpo.micro_batch_tokens: the padded tokens of one forward/backward pass.
	MicroBatchTokens int
	// ActivationBytes is the bytes of one activation value: 2 under bf16 autocast (CUDA), 4 on the CPU.
	ActivationBytes int
}

// TrainerMemory is the estimate's parts, in bytes per process (one GPU, or the CPU trainer's process).
type TrainerMemory struct {
	Weights, Gradients, Optimizer, Reference, Activations, Logits int64
	// Host is what sits in host memory instead (offloaded optimizer state and parameters), per process.
	Host int64
}

// Device is the peak on the device: the sum of the parts that stay there.
func (t TrainerMemory) Device() int64 {
	return t.Weights + t.Gradients + t.Optimizer + t.Reference + t.Activations + t.Logits
}

// EstimateTrainerMemory is the trainer's peak memory per process. With P parameters, N = GPUs, b the
// parameter bytes (4 float32, 2 bfloat16), a the activation bytes, T the micro-batch tokens, L layers of
// hidden size H, I_a the MLP width a token runs through (I, or k·I for k experts per token):
//
//	weights     = P·b/N                  (+ 2 gathered layers, 2·layer·2, under FSDP; 0 when offloaded)
//	gradients   = P·b/N                  (0 when the parameters are offloaded)
//	optimizer   = 8·P/N (float32 Adam m, v) + 4·P/N (float32 master, bfloat16 only); in host memory
//	              under cpu_offload optimizer
//	reference   = P·b/N                  (when kl_beta > 0)
//	activations = L·T·H·a + T·(10·H + 3·I_a)·a   with checkpointing (each layer's input kept, one layer
//	              recomputed at a time); L·T·(10·H + 3·I_a)·a without
//	logits      = T·V·a                  (response positions only, at most the micro-batch)
func EstimateTrainerMemory(m ModelShape, s TrainerMemorySettings) TrainerMemory {
	n := int64(max(1, s.GPUs))
	p := m.Params()
	b := int64(4)
	if s.ParamDType == config.ParamBFloat16 {
		b = 2
	}
	a := int64(max(1, s.ActivationBytes))
	t := int64(s.MicroBatchTokens)
	var est TrainerMemory
	est.Weights, est.Gradients = p*b/n, p*b/n
	if n > 1 {
		est.Weights += 2 * m.LayerParams() * 2
	}
	optimizer := 8 * p / n
	if s.ParamDType == config.ParamBFloat16 {
		optimizer += 4 * p / n
	}
	switch s.CPUOffload {
	case config.OffloadOptimizer:
		est.Host = optimizer
	case config.OffloadOptimizerParams:
		est.Host = optimizer + p*b/n + p*b/n
		est.Weights, est.Gradients = 2*m.LayerParams()*2, 0
	default:
		est.Optimizer = optimizer
	}
	if s.Reference {
		est.Reference = p * b / n
	}
	width := int64(m.Intermediate)
	if m.Experts > 0 {
		width *= int64(m.ExpertsPerToken)
	}
	layer := t * (10*int64(m.Hidden) + 3*width) * a
	if s.GradientCheckpointing {
		est.Activations = int64(m.Layers)*t*int64(m.Hidden)*a + layer
	} else {
		est.Activations = int64(m.Layers) * layer
	}
	est.Logits = t * int64(m.Vocab) * a
	return est
}

// ServerMemory is a generation server's memory per GPU, tensor parallel over TP GPUs: its bf16 weights
// (2·P/TP) and the KV cache of one token (2·L·kv·d·2/TP bytes: keys and values of every layer in bf16).
type ServerMemory struct {
	Weights      int64
	KVPerToken   int64
	TensorShards int
}

// EstimateServerMemory is ServerMemory for a model served over tp GPUs.
func EstimateServerMemory(m ModelShape, tp int) ServerMemory {
	tp = max(1, tp)
	return ServerMemory{
		Weights:      2 * m.Params() / int64(tp),
		KVPerToken:   2 * int64(m.Layers) * int64(m.KVHeads*m.HeadDim) * 2 / int64(tp),
		TensorShards: tp,
	}
}

// TrainerMemorySettingsOf is the estimate's settings for a run configuration on GPUs (bf16 activations).
func TrainerMemorySettingsOf(cfg *config.Config) TrainerMemorySettings {
	g := cfg.GRPO
	return TrainerMemorySettings{GPUs: g.TrainerGPUs, ParamDType: g.ParamDType, CPUOffload: g.CPUOffload,
		GradientCheckpointing: g.GradientCheckpointing, Reference: g.KLBeta > 0 && g.LoRARank == 0,
		MicroBatchTokens: g.MicroBatchTokens, ActivationBytes: 2}
}
