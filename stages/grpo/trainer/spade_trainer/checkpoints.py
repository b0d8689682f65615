"""The checkpoint directory: one directory per weights version, and ``latest.json`` naming the newest.

    <checkpoint_dir>/latest.json                      {"version": "<run>-stepNNNNNN", "step": N}
    <checkpoint_dir>/<run>-stepNNNNNN/                the weights: a LoRA adapter, a Hugging Face
                                                      checkpoint with the tokenizer files, or model.pt
                                                      (the tiny decoder's state dict)
    <checkpoint_dir>/<run>-stepNNNNNN/trainer/        optimizer.pt (optimizer.rankR-ofW.pt per rank under
                                                      torchrun) and metrics.jsonl of the update

``latest.json`` is written (atomically) only after the version was published, so a failed step leaves the
previous version latest.

The resident trainer (``grpo.trainer_mode`` resident) also keeps

    <checkpoint_dir>/full.json                        {"version": "<run>-stepNNNNNN" or null, "step": N}

naming its newest full checkpoint (weights in float32 and optimizer state): the state it resumes from. A
null version is the base model, as it was before step N + 1 trained. Between full checkpoints a version
holds only its weights, in the served dtype (:func:`save_weights`), and no optimizer state.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
from typing import Any, Dict, List, Optional

import torch
from torch import nn

from spade_trainer import model as models
from spade_trainer.config import TrainConfig
from spade_trainer.distributed import Dist

LATEST_FILE = "latest.json"
FULL_FILE = "full.json"
TRAINER_DIR = "trainer"
METRICS_FILE = "metrics.jsonl"
TINY_WEIGHTS = "model.pt"
#: Version directories kept per run prefix (the newest); older ones are deleted after each publish.
KEEP_VERSIONS = 3
#: Files copied from the base model's directory beside full weights, so a server loads the version as is.
TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "vocab.json",
    "merges.txt",
    "special_tokens_map.json",
    "added_tokens.json",
    "generation_config.json",
    "chat_template.jinja",
)


def read_latest(checkpoint_dir: str) -> Optional[Dict[str, Any]]:
    """``{"version", "step"}`` of the newest published version, or None for a fresh run."""
    path = os.path.join(checkpoint_dir, LATEST_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def write_latest(checkpoint_dir: str, version: str, step: int) -> None:
    """Mark ``version`` (of ``step``) the newest published version, atomically."""
    path = os.path.join(checkpoint_dir, LATEST_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"version": version, "step": step}, f)
    os.replace(tmp, path)


def read_full(checkpoint_dir: str, dist: Optional[Dist] = None) -> Optional[Dict[str, Any]]:
    """``{"version", "step"}`` of the newest full checkpoint: ``full.json``, else the latest version when it
    holds this process's optimizer state (a directory the per-step trainer wrote), else None (a fresh run)."""
    path = os.path.join(checkpoint_dir, FULL_FILE)
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    latest = read_latest(checkpoint_dir)
    if latest is None:
        return None
    name = optimizer_file(dist if dist is not None else Dist())
    if os.path.exists(os.path.join(checkpoint_dir, latest["version"], TRAINER_DIR, name)):
        return latest
    return None


def write_full(checkpoint_dir: str, version: Optional[str], step: int) -> None:
    """Mark ``version`` (None: the base model) the newest full checkpoint, as of ``step``, atomically."""
    path = os.path.join(checkpoint_dir, FULL_FILE)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"version": version, "step": step}, f)
    os.replace(tmp, path)


def served_dtype(model_path: str) -> torch.dtype:
    """The dtype the generation servers load: the Hugging Face config's ``torch_dtype`` (bfloat16 for the
    Qwen3 models), float32 for the tiny decoder or a config without one."""
    path = os.path.join(model_path, "config.json")
    if models.is_tiny(model_path) or not os.path.exists(path):
        return torch.float32
    with open(path) as f:
        name = json.load(f).get("torch_dtype") or "float32"
    return {"bfloat16": torch.bfloat16, "float16": torch.float16}.get(str(name), torch.float32)


def save_weights(cfg: TrainConfig, model: nn.Module, state: Optional[Dict[str, torch.Tensor]], version_dir: str, dist: Dist) -> None:
    """Write only the new weights into ``version_dir`` (replaced if it exists), cast to the served dtype:
    what a server loads, without optimizer state. ``state`` is the full state dict on rank 0; every rank
    calls this."""
    if dist.main:
        assert state is not None
        dtype = served_dtype(cfg.model_path)
        cast = {k: (v.detach().to(dtype) if v.is_floating_point() else v.detach()).cpu() for k, v in state.items()}
        if os.path.exists(version_dir):
            shutil.rmtree(version_dir)
        os.makedirs(os.path.join(version_dir, TRAINER_DIR))
        if models.is_tiny(cfg.model_path):
            shutil.copy(os.path.join(cfg.model_path, models.TINY_CONFIG_FILE), version_dir)
            torch.save(cast, os.path.join(version_dir, TINY_WEIGHTS))
        else:
            model.save_pretrained(version_dir, state_dict=cast, safe_serialization=have_safetensors())
            for name in TOKENIZER_FILES:
                src = os.path.join(cfg.model_path, name)
                if os.path.exists(src):
                    shutil.copy(src, version_dir)
    dist.barrier()


def optimizer_file(dist: Dist) -> str:
    """This rank's optimizer state file name (one per rank under torchrun, so a run keeps its GPU count)."""
    return "optimizer.pt" if dist.world == 1 else f"optimizer.rank{dist.rank}-of{dist.world}.pt"


def restore_optimizer(optimizer: torch.optim.Optimizer, version_dir: str, cfg: TrainConfig, dist: Dist) -> bool:
    """Load this rank's optimizer state saved with ``version_dir``, then set the run's lr, weight decay and
    betas on it (the config may have changed between steps). False when there is no saved state."""
    path = os.path.join(version_dir, TRAINER_DIR, optimizer_file(dist))
    if not os.path.exists(path):
        return False
    optimizer.load_state_dict(torch.load(path, map_location="cpu"))
    for group in optimizer.param_groups:
        group["lr"] = cfg.lr
        group["weight_decay"] = cfg.weight_decay
        group["betas"] = (cfg.adam_beta1, cfg.adam_beta2)
    return True


def save_version(
    cfg: TrainConfig,
    model: nn.Module,
    state: Optional[Dict[str, torch.Tensor]],
    optimizer: torch.optim.Optimizer,
    version_dir: str,
    dist: Dist,
) -> None:
    """Write the new weights (adapter, Hugging Face checkpoint or tiny state dict) and this rank's optimizer
    state into ``version_dir`` (replaced if it exists). ``state`` is the full state dict on rank 0
    (:func:`spade_trainer.distributed.full_state_dict`); every rank calls this."""
    if dist.main:
        if os.path.exists(version_dir):
            shutil.rmtree(version_dir)
        os.makedirs(os.path.join(version_dir, TRAINER_DIR))
        assert state is not None
        if cfg.lora_rank > 0:
            # peft keeps only the adapter's tensors of a full state dict (the one gathered under FSDP).
            if dist.world > 1:
                model.save_pretrained(version_dir, state_dict=state)
            else:
                model.save_pretrained(version_dir)
        elif models.is_tiny(cfg.model_path):
            shutil.copy(os.path.join(cfg.model_path, models.TINY_CONFIG_FILE), version_dir)
            torch.save({k: v.detach().cpu() for k, v in state.items()}, os.path.join(version_dir, TINY_WEIGHTS))
        else:
            # A Hugging Face checkpoint a generation server loads as it is: config, weights (safetensors
            # when the module is importable, else torch's pytorch_model.bin) and the tokenizer files.
            safe = have_safetensors()
            if dist.world > 1:
                model.save_pretrained(version_dir, state_dict=state, safe_serialization=safe)
            else:
                model.save_pretrained(version_dir, safe_serialization=safe)
            for name in TOKENIZER_FILES:
                src = os.path.join(cfg.model_path, name)
                if os.path.exists(src):
                    shutil.copy(src, version_dir)
    dist.barrier()
    torch.save(optimizer.state_dict(), os.path.join(version_dir, TRAINER_DIR, optimizer_file(dist)))
    dist.barrier()


def have_safetensors() -> bool:
    """Whether the ``safetensors`` module is importable (Debian's python3 ships without it)."""
    return importlib.util.find_spec("safetensors") is not None


def write_metrics(version_dir: str, rows: List[Dict[str, Any]]) -> None:
    """Keep the update's metric rows with its version, for a re-run of the same step."""
    with open(os.path.join(version_dir, TRAINER_DIR, METRICS_FILE), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


def read_metrics(version_dir: str) -> List[Dict[str, Any]]:
    """The metric rows :func:`write_metrics` kept with ``version_dir``."""
    with open(os.path.join(version_dir, TRAINER_DIR, METRICS_FILE)) as f:
        return [json.loads(line) for line in f if line.strip()]


def prune_versions(checkpoint_dir: str, prefix: str, keep: int, current: str) -> None:
    """Delete all but the newest ``keep`` version directories of this prefix (never ``current``, nor the
    newest full checkpoint that ``full.json`` names)."""
    if keep <= 0:
        return
    full_path = os.path.join(checkpoint_dir, FULL_FILE)
    full = None
    if os.path.exists(full_path):
        with open(full_path) as f:
            full = json.load(f).get("version")
    versions = sorted(
        d for d in os.listdir(checkpoint_dir) if d.startswith(prefix + "-step") and os.path.isdir(os.path.join(checkpoint_dir, d))
    )
    for old in versions[:-keep]:
        if old != current and old != full:
            shutil.rmtree(os.path.join(checkpoint_dir, old), ignore_errors=True)
