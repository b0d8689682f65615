package config

import (
	"math"
	"strconv"
	"strings"

	"github.com/spadekit/spade/schemas"
)

// GRPO configures batch assembly (stages/grpo: advantages and the grpo_batches rows) and the trainer
// that consumes them (grpo.trainer torch: stages/grpo/trainer), and how new weights reach the servers.
type GRPO struct {
	// ClipLow is the PPO ratio clip below 1. A token's ratio π_θ/π_old is clipped at 1 − clip_low (the
	// authors' GRPO_ARGS, 0.2).
	ClipLow float64 `json:"clip_low" range:"[0,1)"`
	// ClipHigh is the PPO ratio clip above 1, clip-higher style. The ratio is clipped at 1 + clip_high
	// (the authors' GRPO_ARGS, 0.28).
	ClipHigh float64 `json:"clip_high" range:">=0"`
	// KLBeta is the weight of the loss's KL penalty to the base model; 0 turns it off. At 0 a short mixed
	// batch also scales its real advantages (the authors' GRPO_ARGS: 0 in games, 0.005 at 8B and in
	// tools).
	KLBeta float64 `json:"kl_beta" range:">=0"`
	// LR is AdamW's learning rate (the authors' OPTIMIZER_ARGS, 1e-6).
	LR float64 `json:"lr" range:">0"`
	// GlobalBatch is the number of samples of one optimizer step. Batches are cut at it whatever the
	// number of trainer GPUs (the authors' --global-batch-size, 192).
	GlobalBatch int `json:"global_batch" range:">=1"`
	// TISCap caps the truncated importance-sampling weight of grpo.tis. The weight is min(tis_cap,
	// π_old/π_rollout) (the authors' spade_tis, 2).
	TISCap float64 `json:"tis_cap" range:">0"`
	// Trainer is which trainer consumes the batches after each step: none or torch. none assembles and
	// commits them only (for an external trainer, or none); torch runs the PyTorch trainer of
	// stages/grpo/trainer.
	Trainer Trainer `json:"trainer"`
	// Python is the interpreter the torch trainer runs with; empty takes $SPADE_PYTHON, else python3 on
	// PATH, or /usr/bin/python3 when only that has torch and numpy (spade logs the choice). It needs torch
	// and numpy.
	Python string `json:"python"`
	// TrainerGPUs is the number of GPUs the trainer uses, on one node. Above 1 it runs under
	// torch.distributed.run, FSDP across the GPUs.
	TrainerGPUs int `json:"trainer_gpus" range:">=1"`
	// IncludeHinted trains the Agent on its hinted episodes too. They are standardized in their own group
	// (their prompt differs); off, only unhinted plays are Agent samples.
	IncludeHinted bool `json:"include_hinted"`
	// Agg is how the trainer averages token losses: token-mean or seq-mean-token-mean. token-mean averages
	// every token of the batch; seq-mean-token-mean each sequence's tokens first, then the sequences
	// (slime's sum_of_sample_mean, the authors').
	Agg Agg `json:"agg"`
	// MaxGradNorm clips the gradient's global norm before each optimizer step; 0 turns clipping off.
	MaxGradNorm float64 `json:"max_grad_norm" range:">=0"`
	// ModelPath is the local directory of the model the torch trainer starts from. It is a Hugging Face
	// checkpoint of the served model, required by grpo.trainer torch.
	ModelPath string `json:"model_path"`
	// Publish is how new weights reach the generation servers after each update. sglang loads each full
	// checkpoint into every server of grpo.publish_urls through /update_weights_from_disk (the authors'
	// slime serves through SGLang); vllm_reload reloads it in place through vLLM's dev-mode
	// /collective_rpc; lora loads each adapter through vLLM's /v1/load_lora_adapter, called by its name;
	// command runs grpo.publish_command; none leaves the servers' weights as they are.
	Publish Publish `json:"publish"`
	// PublishURL is the vLLM server that loads each new LoRA adapter under grpo.publish lora; empty means
	// llm.agent.base_url.
	PublishURL string `json:"publish_url"`
	// PublishURLs lists, comma-separated, the servers that load each new full checkpoint. They are every
	// replica under grpo.publish sglang or vllm_reload; empty means grpo.publish_url, else
	// llm.agent.base_url. A replica that fails to load stops the step with its URL.
	PublishURLs string `json:"publish_urls"`
	// PublishCommand is the command run after each update under grpo.publish command. Its arguments may
	// use {weights_dir}, {version}, {step} and {base_url}; it is run without a shell.
	PublishCommand string `json:"publish_command"`
	// CheckpointDir is the directory of the trainer's weight versions and optimizer state; empty means
	// ./checkpoints/<run>. Under grpo.publish lora, sglang or vllm_reload the servers must read it.
	CheckpointDir string `json:"checkpoint_dir"`
	// LoRARank is the LoRA adapter rank; 0 trains every weight (full fine-tuning, the authors'). Under
	// grpo.trainer torch, grpo.publish lora needs a rank >= 1 and sglang or vllm_reload (which load full
	// checkpoints) a rank of 0; command and none take either.
	LoRARank int `json:"lora_rank" range:">=0"`
	// LoRAAlpha is the adapter's scaling numerator (scale = lora_alpha / lora_rank); unused at rank 0.
	LoRAAlpha float64 `json:"lora_alpha" range:">0"`
	// MicroBatchTokens bounds one forward/backward pass, in padded tokens (samples × longest sequence).
	// Gradients accumulate over micro-batches up to the global batch.
	MicroBatchTokens int `json:"micro_batch_tokens" range:">=1"`
	// WeightDecay is AdamW's decoupled weight decay (the authors' OPTIMIZER_ARGS, 0.1).
	WeightDecay float64 `json:"weight_decay" range:">=0"`
	// AdamBeta1 is Adam's first-moment decay rate (the authors' OPTIMIZER_ARGS, 0.9).
	AdamBeta1 float64 `json:"adam_beta1" range:"[0,1)"`
	// AdamBeta2 is Adam's second-moment decay rate (the authors' OPTIMIZER_ARGS, 0.98).
	AdamBeta2 float64 `json:"adam_beta2" range:"[0,1)"`
	// TIS is the trainer's truncated importance sampling: token, sequence or off. token weights every
	// token of every sample by min(grpo.tis_cap, π_old/π_rollout) (the authors' --use-tis); sequence only
	// the Designer's samples, by a capped per-sample weight; off trains on the rollout log-probs as they
	// are.
	TIS TIS `json:"tis"`
	// GradientCheckpointing recomputes activations in the backward pass, trading time for memory. It
	// fits long sequences (Hugging Face models; the authors' --recompute-granularity full).
	GradientCheckpointing bool `json:"gradient_checkpointing"`
	// TrainerMode is how the torch trainer lives: resident or per_step. resident keeps one trainer
	// process (one torchrun group) loaded across the steps a process runs, model, reference and optimizer
	// in memory, with a full checkpoint every grpo.save_every steps (slime keeps its trainer resident);
	// per_step starts the trainer afresh at every step, which loads and writes a full checkpoint each time.
	TrainerMode TrainerMode `json:"trainer_mode"`
	// SaveEvery is how often the resident trainer writes a full checkpoint (float32 weights and optimizer
	// state): after every step whose number + 1 is a multiple of it, and when the trainer is closed. The
	// steps between save only their weights, in the served dtype, for the servers; a crash resumes from the
	// last full checkpoint and re-trains the later steps from their committed grpo_batches (the authors'
	// --save-interval, 16).
	SaveEvery int `json:"save_every" range:">=1"`
	// ParamDType is the dtype the trainer holds the trained weights in: bfloat16 or float32. bfloat16 keeps
	// a float32 master copy in the optimizer, so small updates are not lost (Megatron's bf16 training, the
	// authors'); float32 trains the float32 weights themselves. LoRA (grpo.lora_rank > 0) ignores it: its
	// adapter is float32 over a bf16 base.
	ParamDType ParamDType `json:"param_dtype"`
	// CPUOffload is what of the training state lives in host memory: none, optimizer or
	// optimizer_params. optimizer keeps Adam's moments and the float32 master weights there, stepped on
	// the CPU (the authors' --optimizer-cpu-offload at 30B); optimizer_params also the parameters between
	// uses (FSDP's CPU offload; needs grpo.trainer_gpus > 1). LoRA (grpo.lora_rank > 0) ignores it.
	CPUOffload CPUOffload `json:"cpu_offload"`
	// Placement is where the torch trainer runs beside the generation servers: colocated or separate.
	// colocated shares their GPUs (the authors' --colocate): around each update every server of
	// grpo.publish_urls releases its GPU memory (SGLang /release_memory_occupation, served with
	// --enable-memory-saver; vLLM /sleep, served with --enable-sleep-mode and VLLM_SERVER_DEV_MODE=1),
	// then takes it back and loads the new weights; it needs grpo.trainer_mode resident and grpo.publish
	// sglang or vllm_reload. separate leaves the servers as they are (the trainer has GPUs of its own).
	Placement Placement `json:"placement"`
	// DesignerAdvScale multiplies the Designer's centred rewards: a number > 0, or auto. auto is min(50,
	// Agent plays per step / Designer samples per pool × sample.refresh_every) (the authors'
	// compute_env_reward_scale, 32 with the games presets).
	DesignerAdvScale string `json:"designer_adv_scale"`
	// SampleUnit is what one Agent sample is: episode or turn. episode is the whole play, the first
	// prompt then every Agent completion with the tokens between them masked (the authors'); turn is one
	// Agent call's prompt and completion.
	SampleUnit SampleUnit `json:"sample_unit"`
	// MixRoles trains both roles in one batch per step (the authors'); off, each role has its own. The
	// batch holds the Designer samples first, then Agent samples, filled (grpo.batch_fill) and cut
	// (grpo.batch_cut) to grpo.global_batch; a batch still short is padded with inert copies and, with
	// grpo.kl_beta 0, its real advantages scaled by global_batch / n_real; one optimizer step per rollout
	// step.
	MixRoles bool `json:"mix_roles"`
	// BatchFill is how a short mixed batch (grpo.mix_roles) is filled: duplicate or pad. duplicate copies
	// whole real Agent plays, in play order from the first, until the Agent plays reach grpo.global_batch
	// minus the Designer samples, and pads only what is still missing (the authors' upsampling); pad adds
	// only inert copies (advantage 0, loss mask 0).
	BatchFill BatchFill `json:"batch_fill"`
	// BatchCut is where an overfull mixed batch (grpo.mix_roles) is cut: tail or random. tail keeps the
	// Designer samples, then the Agent samples in play order (env, play, turn), duplicates last, and cuts
	// what passes grpo.global_batch at the end (the authors'); random shuffles the Agent samples with a
	// PCG stream of (seed, step) before the cut.
	BatchCut BatchCut `json:"batch_cut"`
	// AdvStd is the standard deviation of the Agent's group advantage: population or sample. population
	// divides by n with ε 1e-8 (the authors' np.std); sample by n − 1 with ε 1e-6.
	AdvStd AdvStd `json:"adv_std"`
	// FailedPlay is what a play that failed for infrastructure reasons does to its Agent group. env_error
	// leaves only env_error plays out (timeout and agent_error plays count with their return); drop leaves
	// every failed play out, as the authors' collector does before normalising; minus_one counts every
	// failed play with return −1, without a sample of its own.
	FailedPlay FailedPlay `json:"failed_play"`
	// MaxLeftOutShare is the largest share of a step's Agent plays, in [0, 1], that may be left out of
	// training because their samples cannot be assembled (a broken token sequence, a call without token
	// ids, a turn whose call is missing). Such plays are counted per cause in train_metrics; beyond the
	// share the grpo stage fails naming the cause. 0.05 in every preset (not in the authors' code, whose
	// sequences cannot break: they are built token by token).
	MaxLeftOutShare float64 `json:"max_left_out_share" range:"[0,1]"`
	// CompactFilter trains nothing on a play that ran out before its env ended it (ended_by max_turns or
	// truncated): the play keeps its return in its group, so the others' advantages are unchanged, but
	// every token of its samples has loss mask 0. Running out of budget is not the Agent's failure, and
	// training on it as a loss teaches giving up early (the authors' --spade-compact-filter, on in the
	// tools presets).
	CompactFilter bool `json:"compact_filter"`
	// DesignerStep is the step at which a pool's Designer samples are trained: next_pool or pool_end.
	// next_pool trains them at the next pool's first step, with the rewards of the finished pool (the
	// authors' proposer delay, equal to the refresh interval), and at grpo.final_step whatever still waits,
	// with the rewards of its window so far; pool_end trains them in the update of the pool's last step.
	DesignerStep DesignerStep `json:"designer_step"`
	// FinalStep is the run's last step (−1: none). There the Designer samples that still wait are trained
	// and the regret stage scores the open pool's window as at a pool's end, so the last pool's Designer
	// calls are not lost. The presets' is 399: the authors ran 400 rollout steps.
	FinalStep int64 `json:"final_step" range:">=-1"`
}

func init() {
	registerEnum(BatchFillValues())
	registerEnum(BatchCutValues())
	registerEnum(DesignerStepValues())
	registerEnum(TrainerValues())
	registerEnum(AggValues())
	registerEnum(PublishValues())
	registerEnum(TISValues())
	registerEnum(SampleUnitValues())
	registerEnum(AdvStdValues())
	registerEnum(FailedPlayValues())
	registerEnum(TrainerModeValues())
	registerEnum(ParamDTypeValues())
	registerEnum(CPUOffloadValues())
	registerEnum(PlacementValues())
}

// Placement is grpo.placement: whether the trainer shares the servers' GPUs.
type Placement string

// The placements.
const (
	// PlacementColocated releases the servers' GPU memory around each update.
	PlacementColocated Placement = "colocated"
	// PlacementSeparate leaves the servers as they are.
	PlacementSeparate Placement = "separate"
)

// PlacementValues lists every placement.
func PlacementValues() []Placement { return []Placement{PlacementColocated, PlacementSeparate} }

// TrainerMode is grpo.trainer_mode: whether the torch trainer stays loaded across steps.
type TrainerMode string

// The trainer modes.
const (
	// TrainerResident keeps one trainer process loaded across the steps, checkpointing every
	// grpo.save_every steps.
	TrainerResident TrainerMode = "resident"
	// TrainerPerStep starts the trainer afresh at every step, with a full checkpoint each time.
	TrainerPerStep TrainerMode = "per_step"
)

// TrainerModeValues lists every trainer mode.
func TrainerModeValues() []TrainerMode { return []TrainerMode{TrainerResident, TrainerPerStep} }

// ParamDType is grpo.param_dtype: the dtype of the trained weights in the trainer.
type ParamDType string

// The parameter dtypes.
const (
	// ParamBFloat16 holds the weights in bfloat16, with a float32 master copy in the optimizer.
	ParamBFloat16 ParamDType = "bfloat16"
	// ParamFloat32 holds the weights in float32.
	ParamFloat32 ParamDType = "float32"
)

// ParamDTypeValues lists every parameter dtype.
func ParamDTypeValues() []ParamDType { return []ParamDType{ParamBFloat16, ParamFloat32} }

// CPUOffload is grpo.cpu_offload: what of the training state lives in host memory.
type CPUOffload string

// The offload choices.
const (
	// OffloadNone keeps the whole training state on the GPUs.
	OffloadNone CPUOffload = "none"
	// OffloadOptimizer keeps Adam's moments and the float32 master weights in host memory.
	OffloadOptimizer CPUOffload = "optimizer"
	// OffloadOptimizerParams also keeps the parameters in host memory between uses (FSDP).
	OffloadOptimizerParams CPUOffload = "optimizer_params"
)

// CPUOffloadValues lists every offload choice.
func CPUOffloadValues() []CPUOffload {
	return []CPUOffload{OffloadNone, OffloadOptimizer, OffloadOptimizerParams}
}

// Trainer is grpo.trainer: which trainer consumes the GRPO batches.
type Trainer string

// The trainers.
const (
	// TrainerNone assembles and commits the batches only (an external trainer, or none).
	TrainerNone Trainer = "none"
	// TrainerTorch runs the PyTorch trainer of stages/grpo/trainer after each step.
	TrainerTorch Trainer = "torch"
)

// TrainerValues lists every trainer.
func TrainerValues() []Trainer { return []Trainer{TrainerNone, TrainerTorch} }

// Agg is grpo.agg: how the trainer averages token losses.
type Agg string

// The loss aggregations.
const (
	// AggTokenMean averages over every token of the batch.
	AggTokenMean Agg = "token-mean"
	// AggSeqMeanTokenMean averages each sequence's tokens, then the sequences.
	AggSeqMeanTokenMean Agg = "seq-mean-token-mean"
)

// AggValues lists every aggregation.
func AggValues() []Agg { return []Agg{AggTokenMean, AggSeqMeanTokenMean} }

// Publish is grpo.publish: how new weights reach the generation server.
type Publish string

// The ways to publish weights.
const (
	// PublishLoRA loads each new adapter through vLLM's /v1/load_lora_adapter.
	PublishLoRA Publish = "lora"
	// PublishCommand runs grpo.publish_command.
	PublishCommand Publish = "command"
	// PublishNone publishes nothing (the calls keep the weights they had).
	PublishNone Publish = "none"
	// PublishSGLang loads each full checkpoint into every SGLang server of grpo.publish_urls through
	// POST /update_weights_from_disk {"model_path"}.
	PublishSGLang Publish = "sglang"
	// PublishVLLMReload loads each full checkpoint into every vLLM server of grpo.publish_urls in place
	// (the dev-mode /collective_rpc: update_config to the new path, then reload_weights; the server runs
	// with VLLM_SERVER_DEV_MODE=1).
	PublishVLLMReload Publish = "vllm_reload"
)

// PublishValues lists every way to publish.
func PublishValues() []Publish {
	return []Publish{PublishLoRA, PublishCommand, PublishNone, PublishSGLang, PublishVLLMReload}
}

// FullWeights reports whether a publish mode loads whole checkpoints into a server that keeps its
// served model name (sglang, vllm_reload): calls then keep llm.<role>.model as their model and record
// the published version as weights_version only.
func (p Publish) FullWeights() bool { return p == PublishSGLang || p == PublishVLLMReload }

// TIS is grpo.tis: how the trainer corrects for the inference engine's log-probs.
type TIS string

// The TIS modes.
const (
	// TISToken weights every token by min(grpo.tis_cap, π_old/π_rollout) (the authors' --use-tis).
	TISToken TIS = "token"
	// TISSequence weights the Designer's samples by a capped per-sample ratio to the proximal policy.
	TISSequence TIS = "sequence"
	// TISOff trains on the rollout log-probs as they are.
	TISOff TIS = "off"
)

// TISValues lists every TIS mode.
func TISValues() []TIS { return []TIS{TISToken, TISSequence, TISOff} }

// BatchFill is grpo.batch_fill: how a short mixed batch is filled.
type BatchFill string

// The ways to fill a short batch.
const (
	// FillDuplicate duplicates real Agent plays before padding (the authors').
	FillDuplicate BatchFill = "duplicate"
	// FillPad pads with inert copies only.
	FillPad BatchFill = "pad"
)

// BatchFillValues lists every fill.
func BatchFillValues() []BatchFill { return []BatchFill{FillDuplicate, FillPad} }

// BatchCut is grpo.batch_cut: which samples an overfull mixed batch sheds.
type BatchCut string

// The ways to cut an overfull batch.
const (
	// CutTail sheds the last Agent samples in play order (the authors').
	CutTail BatchCut = "tail"
	// CutRandom sheds Agent samples chosen by a seeded shuffle.
	CutRandom BatchCut = "random"
)

// BatchCutValues lists every cut.
func BatchCutValues() []BatchCut { return []BatchCut{CutTail, CutRandom} }

// DesignerStep is grpo.designer_step: when a pool's Designer samples are trained.
type DesignerStep string

// The steps at which Designer samples are trained.
const (
	// DesignerNextPool trains them at the next pool's first step (the authors').
	DesignerNextPool DesignerStep = "next_pool"
	// DesignerPoolEnd trains them at the pool's last step.
	DesignerPoolEnd DesignerStep = "pool_end"
)

// DesignerStepValues lists every Designer training step.
func DesignerStepValues() []DesignerStep { return []DesignerStep{DesignerNextPool, DesignerPoolEnd} }

// SampleUnit is grpo.sample_unit: what one Agent training sample is.
type SampleUnit string

// The sample units.
const (
	// SampleEpisode is one sample per play: the first prompt, then every Agent completion (trained) with
	// the tokens the chat template adds between them (masked) — the authors' samples.
	SampleEpisode SampleUnit = "episode"
	// SampleTurn is one sample per Agent turn: that call's prompt and completion.
	SampleTurn SampleUnit = "turn"
)

// SampleUnitValues lists every sample unit.
func SampleUnitValues() []SampleUnit { return []SampleUnit{SampleEpisode, SampleTurn} }

// AdvStd is grpo.adv_std: the standard deviation of the Agent's group advantage.
type AdvStd string

// The standard deviations.
const (
	// AdvStdPopulation divides by n, with ε = 1e-8 (the authors' np.std).
	AdvStdPopulation AdvStd = "population"
	// AdvStdSample divides by n − 1, with ε = 1e-6.
	AdvStdSample AdvStd = "sample"
)

// AdvStdValues lists every standard deviation.
func AdvStdValues() []AdvStd { return []AdvStd{AdvStdPopulation, AdvStdSample} }

// FailedPlay is grpo.failed_play: what a play that failed for infrastructure reasons contributes to its
// env's Agent advantage group.
type FailedPlay string

// The ways to treat a failed play.
const (
	// FailedEnvError leaves env_error plays out of the group; timeout and agent_error plays count with
	// their return.
	FailedEnvError FailedPlay = "env_error"
	// FailedDrop leaves every failed play (env_error, timeout, agent_error) out of the group and the
	// batch: what the authors' self-play runs do, since their collector drops FAILED plays (after one
	// retry) before the rewards are normalised.
	FailedDrop FailedPlay = "drop"
	// FailedMinusOne counts every failed play in its group with return −1 (the authors'
	// normalize_rewards_per_game branch); the failed play itself gives no sample.
	FailedMinusOne FailedPlay = "minus_one"
)

// FailedPlayValues lists every way to treat a failed play.
func FailedPlayValues() []FailedPlay { return []FailedPlay{FailedEnvError, FailedDrop, FailedMinusOne} }

// validate checks what the torch trainer needs to publish (a command for command, a LoRA rank for lora
// and none for full checkpoints) and grpo.designer_adv_scale.
func (g GRPO) validate(c *Config) error {
	if g.Trainer == TrainerTorch {
		switch {
		case g.Publish == PublishCommand && strings.TrimSpace(g.PublishCommand) == "":
			return invalidf("config: key \"grpo.publish_command\" is empty but grpo.publish is command")
		case g.Publish.FullWeights() && g.LoRARank != 0:
			return invalidf("config: key \"grpo.lora_rank\" must be 0 when grpo.publish is %s (it loads full checkpoints; use lora for adapters)", g.Publish)
		case g.Publish == PublishLoRA && g.LoRARank < 1:
			return invalidf("config: key \"grpo.lora_rank\" must be >= 1 when grpo.publish is lora (or publish full weights with sglang, vllm_reload or command)")
		case g.CPUOffload == OffloadOptimizerParams && g.TrainerGPUs < 2:
			return invalidf("config: key \"grpo.cpu_offload\" optimizer_params shards the parameters with FSDP: it needs grpo.trainer_gpus >= 2 (use optimizer on one GPU)")
		case g.Publish == PublishLoRA && g.PublishURL == "" && len(SplitList(c.LLM.Agent.BaseURL)) > 1:
			return invalidf("config: key \"grpo.publish\" lora loads each adapter into one server, and llm.agent.base_url lists several: publish full weights (sglang or vllm_reload reach every replica), or load the adapters with grpo.publish command")
		case g.Placement == PlacementColocated && g.TrainerMode != TrainerResident:
			return invalidf("config: key \"grpo.placement\" colocated needs grpo.trainer_mode resident (the servers take their memory back before the new weights are published); or set grpo.placement separate")
		case g.Placement == PlacementColocated && !g.Publish.FullWeights():
			return invalidf("config: key \"grpo.placement\" colocated needs grpo.publish sglang or vllm_reload (servers that release and resume their memory), got %s; or set grpo.placement separate", g.Publish)
		}
	}
	_, _, err := c.DesignerAdvScale()
	return err
}

// DesignerAdvScale parses grpo.designer_adv_scale: auto (returns auto = true) or a number > 0.
func (c *Config) DesignerAdvScale() (scale float64, auto bool, err error) {
	v := strings.TrimSpace(c.GRPO.DesignerAdvScale)
	if v == "auto" {
		return 0, true, nil
	}
	x, perr := strconv.ParseFloat(v, 64)
	if perr != nil || !(x > 0) || math.IsInf(x, 0) {
		return 0, false, invalidf("config: key \"grpo.designer_adv_scale\" must be auto or a number > 0, got %q", c.GRPO.DesignerAdvScale)
	}
	return x, false, nil
}

// PublishURLs returns the generation servers a full-weights publish must reach: grpo.publish_urls
// (comma-separated), else grpo.publish_url, else every replica of llm.agent.base_url.
func (c *Config) PublishURLs() []string {
	if urls := SplitList(c.GRPO.PublishURLs); len(urls) > 0 {
		return urls
	}
	if c.GRPO.PublishURL != "" {
		return []string{c.GRPO.PublishURL}
	}
	return SplitList(c.LLM.Agent.BaseURL)
}

// presetGRPO is the authors' update (GRPO_ARGS, OPTIMIZER_ARGS, slime): clip 0.2/0.28, KL 0 (0.005 at 8B
// and in tools), AdamW at 1e-6 with decay 0.1 and betas 0.9/0.98, one mixed batch of 192 per step,
// token TIS capped at 2, episode samples averaged per sequence, population std, failed plays dropped,
// full fine-tuning published to SGLang; the trainer itself is off (grpo.trainer none).
func presetGRPO(p presetSpec) GRPO {
	g := GRPO{ClipLow: 0.20, ClipHigh: 0.28, KLBeta: 0.0, LR: 1e-6, GlobalBatch: 192, TISCap: 2.0,
		Trainer: TrainerNone, TrainerGPUs: 1, Agg: AggSeqMeanTokenMean, MaxGradNorm: 1.0, Publish: PublishSGLang,
		LoRARank: 0, LoRAAlpha: 64, MicroBatchTokens: 16384, GradientCheckpointing: true, DesignerAdvScale: "auto",
		WeightDecay: 0.1, AdamBeta1: 0.9, AdamBeta2: 0.98, TIS: TISToken, SampleUnit: SampleEpisode, MixRoles: true,
		BatchFill: FillDuplicate, BatchCut: CutTail, DesignerStep: DesignerNextPool, FinalStep: 399,
		AdvStd: AdvStdPopulation, FailedPlay: FailedDrop, MaxLeftOutShare: 0.05}
	if p.size == "qwen3-8b" || p.setting == schemas.SettingTools {
		g.KLBeta = 0.005
	}
	g.CompactFilter = p.setting == schemas.SettingTools
	// slime keeps its Megatron trainer resident, colocated with its SGLang engines, saves every 16 steps
	// and trains bf16 weights with float32 master copies; the 30B scripts also offload the optimizer.
	g.TrainerMode, g.SaveEvery, g.ParamDType, g.CPUOffload = TrainerResident, 16, ParamBFloat16, OffloadNone
	g.Placement = PlacementColocated
	if p.size == "qwen3-30b-a3b" {
		g.CPUOffload = OffloadOptimizer
	}
	if p.size == "qwen3-8b" && p.setting == schemas.SettingGames {
		// A thinking Agent's turns are re-rendered from the canonical history (past think blocks
		// stripped), so each turn is its own sample, every one with its play's advantage. A tools play
		// stays one token-in-token-out sample per episode even when it thinks: its tool turns are
		// built token by token.
		g.SampleUnit = SampleTurn
	}
	if p.ownToolsScript() {
		g.GlobalBatch = 256
	}
	return g
}
