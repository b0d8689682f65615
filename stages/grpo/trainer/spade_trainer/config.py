"""The trainer's settings: the JSON the Go side writes for ``--config`` (``trainerConfig`` in stages/grpo/trainer.go).

Every value comes from the run's configuration (``grpo.*``, ``seed``) or from the step being trained, and no
key has a default here, so the presets have one home (internal/config). A missing key, an unknown key, a
value of the wrong type or one out of range is a ValueError whose one-line message names the key. The Go
test ``TestTrainerConfigKeysMatchPython`` holds the key lists of both sides equal.

This module imports only the standard library (and :mod:`spade_trainer.publish`, which does too), so the key
list is readable without PyTorch.
"""

import json
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List

from spade_trainer import publish as publishing

TIS_TOKEN = "token"
TIS_SEQUENCE = "sequence"
TIS_OFF = "off"
TIS_MODES = (TIS_TOKEN, TIS_SEQUENCE, TIS_OFF)

#: ``grpo.trainer_mode``: a process per step, or one process that stays loaded across the steps.
MODE_PER_STEP = "per_step"
MODE_RESIDENT = "resident"
TRAINER_MODES = (MODE_PER_STEP, MODE_RESIDENT)

#: ``grpo.param_dtype``: the dtype the trained parameters are held in on the device.
PARAM_FLOAT32 = "float32"
PARAM_BFLOAT16 = "bfloat16"
PARAM_DTYPES = (PARAM_FLOAT32, PARAM_BFLOAT16)

#: ``grpo.cpu_offload``: what of the training state lives in host memory instead of the device's.
OFFLOAD_NONE = "none"
OFFLOAD_OPTIMIZER = "optimizer"
OFFLOAD_OPTIMIZER_PARAMS = "optimizer_params"
OFFLOAD_MODES = (OFFLOAD_NONE, OFFLOAD_OPTIMIZER, OFFLOAD_OPTIMIZER_PARAMS)

PUBLISH_MODES = (publishing.MODE_LORA, publishing.MODE_COMMAND, publishing.MODE_NONE) + publishing.FULL_WEIGHT_MODES


def _key(source: str) -> Any:
    """A required field; ``source`` says which run-config key (or step value) fills it, for error messages."""
    return field(metadata={"source": source})


@dataclass
class PublishConfig:
    """How new weights reach the generation servers (``publish`` in the trainer config)."""

    #: ``grpo.publish``: lora, command, none, sglang or vllm_reload (:mod:`spade_trainer.publish`).
    mode: str = _key("grpo.publish")
    #: ``grpo.publish_url``, else ``llm.agent.base_url``: the vLLM server that loads LoRA adapters.
    base_url: str = _key("grpo.publish_url or llm.agent.base_url")
    #: ``grpo.publish_command``: the template run under mode ``command``.
    command: str = _key("grpo.publish_command")
    #: The run's name: every version is ``<name_prefix>-stepNNNNNN``.
    name_prefix: str = _key("the run's name")
    #: ``grpo.publish_urls`` (else publish_url, else llm.agent.base_url) under sglang and vllm_reload: every
    #: replica that loads a full checkpoint; empty under the other modes.
    urls: List[str] = _key("grpo.publish_urls")


@dataclass
class TrainConfig:
    """One update's settings; the field names are the JSON keys (``publish`` nests :class:`PublishConfig`)."""

    #: The step being trained; the batch file must be for the same step.
    step: int = _key("the step")
    #: ``seed``: the run's seed (the tiny model's initialisation; torch's seed is seed + step).
    seed: int = _key("seed")
    #: ``grpo.model_path``, made absolute: the base model's directory.
    model_path: str = _key("grpo.model_path")
    #: ``grpo.checkpoint_dir`` (else ./checkpoints/<run>), made absolute: versions and optimizer state.
    checkpoint_dir: str = _key("grpo.checkpoint_dir")
    #: ``grpo.lora_rank``: the adapter rank; 0 trains every weight.
    lora_rank: int = _key("grpo.lora_rank")
    #: ``grpo.lora_alpha``: the adapter's scaling numerator (scale = alpha / rank).
    lora_alpha: float = _key("grpo.lora_alpha")
    #: ``grpo.lr``: AdamW's constant learning rate.
    lr: float = _key("grpo.lr")
    #: ``grpo.weight_decay``: AdamW's decoupled weight decay.
    weight_decay: float = _key("grpo.weight_decay")
    #: ``grpo.adam_beta1``, ``grpo.adam_beta2``: Adam's moment decay rates, each in [0, 1).
    adam_beta1: float = _key("grpo.adam_beta1")
    adam_beta2: float = _key("grpo.adam_beta2")
    #: ``grpo.max_grad_norm``: the gradient norm is clipped to it; 0 does not clip.
    max_grad_norm: float = _key("grpo.max_grad_norm")
    #: ``grpo.tis``: ``token`` weights every token of every sample by min(tis_cap, π_old/π_rollout), with
    #: π_old the trainer's own log-probs before the update; ``sequence`` corrects only samples with an
    #: ``is_cap`` (the Designer's late rewards) by a capped per-sample weight; ``off`` uses the rollout
    #: log-probs as they are.
    tis: str = _key("grpo.tis")
    #: ``grpo.tis_cap``: the cap of the token TIS weight, > 0.
    tis_cap: float = _key("grpo.tis_cap")
    #: Divides the sum of sample means of ``seq-mean-token-mean`` by max(this, samples in the global batch)
    #: instead of the samples present (0): ``grpo.global_batch`` under ``grpo.mix_roles`` (a short batch
    #: compensates by scaling its rewards), else 0.
    sample_mean_denominator: int = _key("grpo.global_batch under grpo.mix_roles, else 0")
    #: ``grpo.clip_low``, ``grpo.clip_high``: the surrogate's ratio is clipped to [1 − low, 1 + high].
    clip_low: float = _key("grpo.clip_low")
    clip_high: float = _key("grpo.clip_high")
    #: ``grpo.kl_beta``: weight of the k3 KL to the reference policy; 0 loads no reference.
    kl_beta: float = _key("grpo.kl_beta")
    #: ``grpo.agg``: token-mean or seq-mean-token-mean (:data:`spade_trainer.loss.AGGREGATIONS`).
    agg: str = _key("grpo.agg")
    #: ``grpo.micro_batch_tokens``: padded tokens (samples × longest) of one forward/backward pass, > 0.
    micro_batch_tokens: int = _key("grpo.micro_batch_tokens")
    #: ``grpo.gradient_checkpointing``: recompute activations in backward (Hugging Face models).
    gradient_checkpointing: bool = _key("grpo.gradient_checkpointing")
    #: ``grpo.trainer_mode``: ``per_step`` (one process per step, every version a full checkpoint) or
    #: ``resident`` (one process serving every step; full checkpoints every ``save_every`` steps).
    trainer_mode: str = _key("grpo.trainer_mode")
    #: ``grpo.save_every``: under ``resident``, a full checkpoint (weights and optimizer) after every step
    #: whose number + 1 is a multiple of it, and when the trainer is closed; the steps between save only
    #: the weights, in the served dtype.
    save_every: int = _key("grpo.save_every")
    #: ``grpo.param_dtype``: float32, or bfloat16 with a float32 master copy kept by the optimizer (full
    #: fine-tuning; LoRA ignores it and the next key).
    param_dtype: str = _key("grpo.param_dtype")
    #: ``grpo.cpu_offload``: none, optimizer (Adam moments and float32 master weights in host memory) or
    #: optimizer_params (also the parameters, FSDP's CPU offload; needs several GPUs).
    cpu_offload: str = _key("grpo.cpu_offload")
    publish: PublishConfig = _key("grpo.publish and its keys")

    @staticmethod
    def from_dict(raw: Dict[str, Any]) -> "TrainConfig":
        """Build and validate a config from the decoded JSON.

        Raises ValueError naming the first missing key, unknown key or badly typed value (nested keys as
        ``publish.mode``), or the first setting out of range (:meth:`validate`).
        """
        values = _take(TrainConfig, raw, "")
        values["publish"] = PublishConfig(**_take(PublishConfig, raw["publish"], "publish."))
        cfg = TrainConfig(**values)
        cfg.validate()
        return cfg

    def validate(self) -> None:
        """Check every setting's range and the publish mode's needs; a ValueError names the run-config key."""
        # loss needs PyTorch; importing it here keeps the key list importable without it.
        from spade_trainer import loss as losses

        if self.tis not in TIS_MODES:
            raise ValueError(f"grpo.tis: {self.tis!r} is not one of {', '.join(TIS_MODES)}")
        if not self.tis_cap > 0:
            raise ValueError(f"grpo.tis_cap: want > 0, got {self.tis_cap}")
        if not (0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1):
            raise ValueError(f"grpo.adam_beta1/adam_beta2: want values in [0, 1), got {self.adam_beta1}/{self.adam_beta2}")
        if self.sample_mean_denominator < 0:
            raise ValueError(f"grpo.global_batch (sample_mean_denominator): want >= 0, got {self.sample_mean_denominator}")
        if self.agg not in losses.AGGREGATIONS:
            raise ValueError(f"grpo.agg: {self.agg!r} is not one of {sorted(losses.AGGREGATIONS)}")
        if not (0 <= self.clip_low < 1) or self.clip_high < 0:
            raise ValueError(f"grpo.clip_low/clip_high: want 0 <= low < 1 and high >= 0, got {self.clip_low}/{self.clip_high}")
        if self.kl_beta < 0:
            raise ValueError(f"grpo.kl_beta: want >= 0, got {self.kl_beta}")
        if not self.lr > 0:
            raise ValueError(f"grpo.lr: want > 0, got {self.lr}")
        if self.max_grad_norm < 0:
            raise ValueError(f"grpo.max_grad_norm: want >= 0, got {self.max_grad_norm}")
        if self.micro_batch_tokens <= 0:
            raise ValueError(f"grpo.micro_batch_tokens: want > 0, got {self.micro_batch_tokens}")
        if self.lora_rank < 0:
            raise ValueError(f"grpo.lora_rank: want >= 0, got {self.lora_rank}")
        if not self.checkpoint_dir:
            raise ValueError("grpo.checkpoint_dir: empty; the trainer needs a directory for its weights")
        if self.trainer_mode not in TRAINER_MODES:
            raise ValueError(f"grpo.trainer_mode: {self.trainer_mode!r} is not one of {', '.join(TRAINER_MODES)}")
        if self.save_every < 1:
            raise ValueError(f"grpo.save_every: want >= 1, got {self.save_every}")
        if self.param_dtype not in PARAM_DTYPES:
            raise ValueError(f"grpo.param_dtype: {self.param_dtype!r} is not one of {', '.join(PARAM_DTYPES)}")
        if self.cpu_offload not in OFFLOAD_MODES:
            raise ValueError(f"grpo.cpu_offload: {self.cpu_offload!r} is not one of {', '.join(OFFLOAD_MODES)}")
        if self.publish.mode not in PUBLISH_MODES:
            raise ValueError(f"grpo.publish: {self.publish.mode!r} is not one of {', '.join(PUBLISH_MODES)}")
        if self.publish.mode in publishing.FULL_WEIGHT_MODES and self.lora_rank != 0:
            raise ValueError(f"grpo.publish {self.publish.mode} loads full checkpoints: it needs grpo.lora_rank = 0")
        if self.publish.mode in publishing.FULL_WEIGHT_MODES and not self.publish.urls:
            raise ValueError(f"grpo.publish {self.publish.mode} needs grpo.publish_urls (or publish_url / llm.agent.base_url)")
        if self.publish.mode == publishing.MODE_LORA and self.lora_rank <= 0:
            raise ValueError("grpo.publish lora needs LoRA training (grpo.lora_rank > 0); publish full weights with command")
        if self.publish.mode == publishing.MODE_COMMAND and not self.publish.command.strip():
            raise ValueError("grpo.publish command needs grpo.publish_command")


def keys() -> List[str]:
    """Every key of the trainer config, sorted, nested ones dotted (``publish.mode``)."""
    out = [f.name for f in fields(TrainConfig) if f.type is not PublishConfig]
    out += ["publish." + f.name for f in fields(PublishConfig)]
    return sorted(out)


def _take(cls: type, raw: Any, prefix: str) -> Dict[str, Any]:
    """The fields of dataclass ``cls`` from the JSON object ``raw``, type-checked (ints accepted as floats)."""
    if not isinstance(raw, dict):
        where = f'key "{prefix.rstrip(".")}"' if prefix else "the top level"
        raise ValueError(f"trainer config: {where} is not a JSON object")
    declared = {f.name: f for f in fields(cls)}
    for name in raw:
        if name not in declared:
            raise ValueError(f'trainer config: unknown key "{prefix + name}"')
    values: Dict[str, Any] = {}
    for name, f in declared.items():
        key = prefix + name
        if name not in raw:
            raise ValueError(f'trainer config: missing key "{key}" (from {f.metadata["source"]})')
        value = raw[name]
        if f.type is PublishConfig:
            values[name] = value  # built by the caller, with its own prefix
            continue
        if not _is_type(value, f.type):
            raise ValueError(f'trainer config: key "{key}": want {_type_name(f.type)}, got {json.dumps(value)}')
        values[name] = float(value) if f.type is float else value
    return values


def _is_type(value: Any, want: Any) -> bool:
    if want is bool:
        return isinstance(value, bool)
    if want is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if want is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if want is str:
        return isinstance(value, str)
    if want == List[str]:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    raise TypeError(f"trainer config: no type check for {want!r}")


def _type_name(want: Any) -> str:
    return {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}.get(want, "a list of strings")
