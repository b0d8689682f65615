"""The trainer's entry point: one GRPO update from one batch file, then new weights published.

    python -m spade_trainer.train --batch step.npz --config trainer.json --metrics out.jsonl \
        [--error-file err.txt]

or, for ``grpo.trainer_gpus`` = N > 1, the same under ``python -m torch.distributed.run --nproc_per_node N``
(FSDP, full state saved by rank 0).

What one run does (docs/architecture.md, "Contracts"):

1. Reads and validates the batch (:mod:`spade_trainer.batch`); any bad sample is an error that names it,
   before a model is loaded.
2. Loads the policy: the base model from ``model_path`` and, when ``checkpoint_dir`` holds an earlier
   version, that version's weights (full) or adapter (LoRA) and optimizer state. Token ids are checked
   against the vocabulary.
3. For samples with ``is_cap`` > 0 (the Designer, whose reward arrives late) runs one no-grad pass: the
   policy at the start of the update is the proximal policy. Their IS weight is
   ``min(is_cap, π_prox/π_behaviour)`` (detached) and their ratio is taken to π_prox, so staleness is
   corrected by the capped weight instead of being clipped away (decoupled PPO). Other samples use the
   batch's ``is_weight`` and their behaviour log-probs.
4. One optimizer step per global batch (the ``batch`` column): micro-batches of at most
   ``micro_batch_tokens`` padded tokens, one role each, each loss scaled by its share of the global
   batch's aggregation units so the accumulated gradient is that of ``agg`` over the whole global batch;
   the gradient norm is clipped to ``max_grad_norm``; AdamW at ``lr``. A non-finite loss or gradient norm
   is an error and no step is taken.
5. Saves the new version (``<name_prefix>-stepNNNNNN``) under ``checkpoint_dir``, publishes it
   (:mod:`spade_trainer.publish`), then marks it latest. Writes one JSON line of metrics per role, each
   with the whole update's ``update_seconds``, ``tokens_per_second`` and ``peak_memory_bytes``.

Re-running a step that is already the latest version re-emits its metrics without training again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import sys
import time
import traceback
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch
from torch import nn

from spade_trainer import batch as batchfile
from spade_trainer import loss as losses
from spade_trainer import model as models
from spade_trainer import publish as publishing
from spade_trainer.logprobs import logprobs_fused

TIS_TOKEN = "token"
TIS_SEQUENCE = "sequence"
TIS_OFF = "off"
TIS_MODES = (TIS_TOKEN, TIS_SEQUENCE, TIS_OFF)

LATEST_FILE = "latest.json"
TRAINER_DIR = "trainer"
METRICS_FILE = "metrics.jsonl"
TINY_WEIGHTS = "model.pt"
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


@dataclass
class PublishConfig:
    """``grpo.publish`` (mode), ``grpo.publish_url``, ``grpo.publish_command``; the name prefix is the run."""

    mode: str = publishing.MODE_LORA
    base_url: str = ""
    command: str = ""
    name_prefix: str = "spade"
    timeout_s: float = 120.0
    #: ``grpo.publish_urls``: every replica that loads a full checkpoint (sglang, vllm_reload).
    urls: List[str] = field(default_factory=list)


@dataclass
class TrainConfig:
    """What the Go side passes in ``--config`` (JSON); the keys mirror ``grpo.*`` of the run config."""

    step: int = 0
    seed: int = 0
    model_path: str = ""
    checkpoint_dir: str = ""
    lora_rank: int = 0
    lora_alpha: float = 32.0
    lora_targets: List[str] = field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
    )
    lr: float = 1e-6
    weight_decay: float = 0.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    max_grad_norm: float = 1.0
    #: ``grpo.tis``: ``token`` weights every token of every sample by min(tis_cap, π_old/π_rollout), with
    #: π_old the trainer's own log-probs before the update; ``sequence`` corrects only samples with an
    #: ``is_cap`` (the Designer's late rewards) by a capped per-sample weight; ``off`` uses the rollout
    #: log-probs as they are.
    tis: str = TIS_SEQUENCE
    tis_cap: float = 2.0
    #: Divides the sum of sample means of ``seq-mean-token-mean`` by max(this, samples in the global batch)
    #: instead of the samples present (0): slime's ``sum_of_sample_mean`` over ``global_batch`` samples,
    #: which a short batch compensates by scaling its rewards.
    sample_mean_denominator: int = 0
    clip_low: float = 0.2
    clip_high: float = 0.28
    kl_beta: float = 0.0
    agg: str = losses.AGG_TOKEN_MEAN
    micro_batch_tokens: int = 16384
    gradient_checkpointing: bool = True
    keep_versions: int = 3
    publish: PublishConfig = field(default_factory=PublishConfig)

    @staticmethod
    def from_dict(raw: Dict[str, Any]) -> "TrainConfig":
        """Build and validate a config; an unknown key or a bad value is a ValueError naming the key."""
        known = {f.name for f in fields(TrainConfig)}
        for key in raw:
            if key not in known:
                raise ValueError(f"trainer config: unknown key {key!r}")
        values = dict(raw)
        pub = values.pop("publish", {}) or {}
        pub_known = {f.name for f in fields(PublishConfig)}
        for key in pub:
            if key not in pub_known:
                raise ValueError(f"trainer config: unknown key 'publish.{key}'")
        cfg = TrainConfig(**values, publish=PublishConfig(**pub))
        cfg.validate()
        return cfg

    def validate(self) -> None:
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
        if self.micro_batch_tokens <= 0:
            raise ValueError(f"grpo.micro_batch_tokens: want > 0, got {self.micro_batch_tokens}")
        if not self.checkpoint_dir:
            raise ValueError("grpo.checkpoint_dir: empty; the trainer needs a directory for its weights")
        modes = (publishing.MODE_LORA, publishing.MODE_COMMAND, publishing.MODE_NONE) + publishing.FULL_WEIGHT_MODES
        if self.publish.mode not in modes:
            raise ValueError(f"grpo.publish: {self.publish.mode!r} is not one of {', '.join(modes)}")
        if self.publish.mode in publishing.FULL_WEIGHT_MODES and self.lora_rank != 0:
            raise ValueError(f"grpo.publish {self.publish.mode} loads full checkpoints: it needs grpo.lora_rank = 0")
        if self.publish.mode in publishing.FULL_WEIGHT_MODES and not self.publish.urls:
            raise ValueError(f"grpo.publish {self.publish.mode} needs grpo.publish_urls (or publish_url / llm.agent.base_url)")
        if self.publish.mode == publishing.MODE_LORA and self.lora_rank <= 0:
            raise ValueError("grpo.publish lora needs LoRA training (grpo.lora_rank > 0); publish full weights with command")
        if self.publish.mode == publishing.MODE_COMMAND and not self.publish.command.strip():
            raise ValueError("grpo.publish command needs grpo.publish_command")


def log(msg: str) -> None:
    """One plain log line on stderr (the Go side streams it)."""
    print(f"spade-trainer: {msg}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------------------
# Processes


@dataclass
class Dist:
    """Where this process sits: rank and world size (1 without torchrun) and its device."""

    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")

    @property
    def main(self) -> bool:
        return self.rank == 0

    def sum(self, values: torch.Tensor) -> torch.Tensor:
        if self.world > 1:
            import torch.distributed as dist

            values = values.to(self.device)
            dist.all_reduce(values, op=dist.ReduceOp.SUM)
        return values.cpu()

    def max(self, values: torch.Tensor) -> torch.Tensor:
        if self.world > 1:
            import torch.distributed as dist

            values = values.to(self.device)
            dist.all_reduce(values, op=dist.ReduceOp.MAX)
        return values.cpu()

    def barrier(self) -> None:
        if self.world > 1:
            import torch.distributed as dist

            dist.barrier()


def init_dist() -> Dist:
    """Join the process group when started by torchrun (WORLD_SIZE > 1); pick the device."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    if world > 1:
        import torch.distributed as dist

        local = int(os.environ.get("LOCAL_RANK", "0"))
        if torch.cuda.is_available():
            torch.cuda.set_device(local)
            device = torch.device("cuda", local)
            dist.init_process_group("nccl")
        else:
            device = torch.device("cpu")
            dist.init_process_group("gloo")
        return Dist(rank=rank, world=world, device=device)
    return Dist(device=torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu"))


# ---------------------------------------------------------------------------------------------------------
# Micro-batches


@dataclass
class MicroBatch:
    """Padded tensors of a few samples of one role (all on one device)."""

    indices: List[int]
    role: str
    input_ids: torch.Tensor  # [B, L] prompt + response, right padded
    attention_mask: torch.Tensor  # [B, L]
    rows: torch.Tensor  # [N] sample of each response token
    cols: torch.Tensor  # [N] position whose hidden state predicts it
    targets: torch.Tensor  # [N] the response token
    resp_cols: torch.Tensor  # [N] its index within the response
    mask: torch.Tensor  # [B, R] 1 on response tokens
    behaviour: torch.Tensor  # [B, R] old log-probs (0 on padding)
    advantages: torch.Tensor  # [B]
    is_weights: torch.Tensor  # [B] precomputed weights
    is_caps: torch.Tensor  # [B]


def pack(indices: Sequence[int], samples: Sequence[batchfile.Sample], max_tokens: int) -> List[List[int]]:
    """Greedy micro-batches in order: a group grows while ``len(group) · longest ≤ max_tokens``.

    A sample longer than ``max_tokens`` gets a micro-batch of its own.
    """
    groups: List[List[int]] = []
    current: List[int] = []
    longest = 0
    for i in indices:
        length = len(samples[i].prompt_ids) + len(samples[i].response_ids)
        if current and (len(current) + 1) * max(longest, length) > max_tokens:
            groups.append(current)
            current, longest = [], 0
        current.append(i)
        longest = max(longest, length)
    if current:
        groups.append(current)
    return groups


def collate(indices: List[int], samples: Sequence[batchfile.Sample], device: torch.device) -> MicroBatch:
    """Right-pad the samples into tensors; response token t of sample b is predicted at position P_b − 1 + t."""
    chosen = [samples[i] for i in indices]
    length = max(len(s.prompt_ids) + len(s.response_ids) for s in chosen)
    resp_len = max(len(s.response_ids) for s in chosen)
    batch = len(chosen)
    input_ids = torch.zeros(batch, length, dtype=torch.long)
    attention = torch.zeros(batch, length, dtype=torch.long)
    mask = torch.zeros(batch, resp_len)
    behaviour = torch.zeros(batch, resp_len)
    rows: List[int] = []
    cols: List[int] = []
    resp_cols: List[int] = []
    targets: List[int] = []
    for b, s in enumerate(chosen):
        p, r = len(s.prompt_ids), len(s.response_ids)
        input_ids[b, : p + r] = torch.tensor(s.prompt_ids + s.response_ids, dtype=torch.long)
        attention[b, : p + r] = 1
        mask[b, :r] = torch.tensor(s.mask(), dtype=mask.dtype) if s.loss_mask is not None else 1.0
        behaviour[b, :r] = torch.tensor(s.old_logprobs)
        rows.extend([b] * r)
        cols.extend(range(p - 1, p - 1 + r))
        resp_cols.extend(range(r))
        targets.extend(s.response_ids)

    def t(values: List[int]) -> torch.Tensor:
        return torch.tensor(values, dtype=torch.long, device=device)

    return MicroBatch(
        indices=list(indices),
        role=chosen[0].role,
        input_ids=input_ids.to(device),
        attention_mask=attention.to(device),
        rows=t(rows),
        cols=t(cols),
        targets=t(targets),
        resp_cols=t(resp_cols),
        mask=mask.to(device),
        behaviour=behaviour.to(device),
        advantages=torch.tensor([s.advantage for s in chosen], dtype=torch.float32, device=device),
        is_weights=torch.tensor([s.is_weight for s in chosen], dtype=torch.float32, device=device),
        is_caps=torch.tensor([s.is_cap for s in chosen], dtype=torch.float32, device=device),
    )


def response_logprobs(module: nn.Module, mb: MicroBatch, autocast: Callable[[], Any]) -> torch.Tensor:
    """Log-probs of every response token under ``module``: float32 [B, R], 0 on padding."""
    with autocast():
        flat = module(mb.input_ids, mb.attention_mask, mb.rows, mb.cols, mb.targets)
    out = torch.zeros(mb.mask.shape, dtype=torch.float32, device=flat.device)
    return out.index_put((mb.rows, mb.resp_cols), flat.float())


# ---------------------------------------------------------------------------------------------------------
# Per-role metrics


@dataclass
class RoleStats:
    """Sums over one role's micro-batches, reduced over processes at the end."""

    tokens: float = 0.0
    samples: float = 0.0
    loss: float = 0.0  # Σ loss · tokens
    kl: float = 0.0
    clip_low: float = 0.0
    clip_high: float = 0.0
    ratio: float = 0.0
    is_weight: float = 0.0  # Σ weight · samples
    seconds: float = 0.0
    ratio_max: float = 0.0
    grad_norms: List[float] = field(default_factory=list)

    def add(self, m: Dict[str, float], samples: int, seconds: float) -> None:
        tokens = m["tokens"]
        self.tokens += tokens
        self.samples += samples
        self.loss += m["loss"] * tokens
        self.kl += m["kl"] * tokens
        self.clip_low += m["clip_frac_low"] * tokens
        self.clip_high += m["clip_frac_high"] * tokens
        self.ratio += m["ratio_mean"] * tokens
        self.is_weight += m["is_weight_mean"] * samples
        self.seconds += seconds
        self.ratio_max = max(self.ratio_max, m["ratio_max"])

    _SUMMED = ("tokens", "samples", "loss", "kl", "clip_low", "clip_high", "ratio", "is_weight", "seconds")

    def reduce(self, dist: Dist) -> None:
        summed = dist.sum(torch.tensor([getattr(self, k) for k in self._SUMMED], dtype=torch.float64))
        for k, v in zip(self._SUMMED, summed.tolist()):
            setattr(self, k, v)
        self.ratio_max = float(dist.max(torch.tensor([self.ratio_max], dtype=torch.float64))[0])

    def row(self, role: str, lr: float, version: str) -> Dict[str, Any]:
        tokens = max(self.tokens, 1.0)
        low, high = self.clip_low / tokens, self.clip_high / tokens
        return {
            "role": role,
            "loss": self.loss / tokens,
            "kl": self.kl / tokens,
            "clip_frac": low + high,
            "clip_frac_low": low,
            "clip_frac_high": high,
            "ratio_mean": self.ratio / tokens,
            "ratio_max": self.ratio_max,
            "is_weight_mean": self.is_weight / max(self.samples, 1.0),
            "grad_norm": sum(self.grad_norms) / len(self.grad_norms) if self.grad_norms else 0.0,
            "lr": lr,
            "tokens": int(round(self.tokens)),
            "samples": int(round(self.samples)),
            "weights_version": version,
            "seconds": self.seconds,
        }


# ---------------------------------------------------------------------------------------------------------
# The update


@dataclass
class Policy:
    """The trainable policy as the update sees it."""

    module: nn.Module  # PolicyLogprobs, FSDP-wrapped when world > 1
    params: List[nn.Parameter]
    optimizer: torch.optim.Optimizer
    reference: Optional[Callable[[MicroBatch], torch.Tensor]]  # no-grad ref log-probs [B, R]
    autocast: Callable[[], Any]
    clip_grad: Callable[[float], torch.Tensor]


def _rank_share(groups: List[List[int]], dist: Dist) -> List[Tuple[List[int], bool]]:
    """This rank's micro-batches; every rank gets the same count (FSDP runs collectives in each forward),
    padded with a repeat of the first group marked as a dummy (its loss is scaled by 0)."""
    mine = [(g, True) for g in groups[dist.rank :: dist.world]]
    per_rank = -(-len(groups) // dist.world)
    while len(mine) < per_rank:
        mine.append((groups[0], False))
    return mine


def run_update(
    cfg: TrainConfig,
    samples: List[batchfile.Sample],
    policy: Policy,
    dist: Dist,
) -> Dict[str, RoleStats]:
    """Steps the optimizer once per global batch; returns per-role stats (not yet reduced over ranks)."""
    stats: Dict[str, RoleStats] = {}
    proximal: Dict[int, List[float]] = {}
    device = dist.device

    # The proximal pass: the policy's own log-probs before the update, for the samples it corrects.
    if cfg.tis == TIS_TOKEN:
        tis = list(range(len(samples)))
    elif cfg.tis == TIS_SEQUENCE:
        tis = [i for i, s in enumerate(samples) if s.is_cap > 0]
    else:
        tis = []
    if tis:
        started = time.perf_counter()
        with torch.no_grad():
            for group, real in _rank_share(pack(tis, samples, cfg.micro_batch_tokens), dist):
                mb = collate(group, samples, device)
                logp = response_logprobs(policy.module, mb, policy.autocast)
                if real:
                    for b, i in enumerate(group):
                        proximal[i] = logp[b, : len(samples[i].response_ids)].tolist()
        proximal = _gather_proximal(proximal, dist)
        log(f"proximal pass over {len(tis)} samples ({cfg.tis} TIS) in {time.perf_counter() - started:.1f}s")

    for batch_no in sorted({s.batch for s in samples}):
        in_batch = [i for i, s in enumerate(samples) if s.batch == batch_no]
        groups: List[List[int]] = []
        for role in batchfile.ROLES:
            role_idx = [i for i in in_batch if samples[i].role == role]
            groups.extend(pack(role_idx, samples, cfg.micro_batch_tokens))
        if cfg.agg == losses.AGG_TOKEN_MEAN:
            units = float(max(1, sum(sum(samples[i].mask()) for i in in_batch)))
        else:
            units = float(max(len(in_batch), cfg.sample_mean_denominator))
        policy.optimizer.zero_grad(set_to_none=True)
        roles_in_batch = sorted({samples[i].role for i in in_batch})
        bad_samples: List[str] = []
        for group, real in _rank_share(groups, dist):
            started = time.perf_counter()
            mb = collate(group, samples, device)
            behaviour = mb.behaviour
            is_weights = mb.is_weights
            if cfg.tis == TIS_TOKEN:
                prox = torch.zeros_like(mb.behaviour)
                for b, i in enumerate(group):
                    prox[b, : len(proximal[i])] = torch.tensor(proximal[i], device=device)
                is_weights = losses.compute_token_tis_weight(prox, mb.behaviour, mb.mask, cfg.tis_cap)
                behaviour = prox
            elif cfg.tis == TIS_SEQUENCE and any(samples[i].is_cap > 0 for i in group):
                prox = torch.zeros_like(mb.behaviour)
                for b, i in enumerate(group):
                    if samples[i].is_cap > 0:
                        prox[b, : len(proximal[i])] = torch.tensor(proximal[i], device=device)
                capped = mb.is_caps > 0
                truncated = losses.compute_truncated_is_weight(prox, mb.behaviour, mb.mask, mb.is_caps)
                behaviour = torch.where(capped.unsqueeze(-1), prox, mb.behaviour)
                is_weights = torch.where(capped, truncated, mb.is_weights)
            ref_logp = policy.reference(mb) if policy.reference is not None else None
            logp = response_logprobs(policy.module, mb, policy.autocast)
            loss, metrics = losses.grpo_loss(
                logp,
                behaviour,
                mb.advantages,
                mb.mask,
                clip_low=cfg.clip_low,
                clip_high=cfg.clip_high,
                is_weights=is_weights,
                ref_logp=ref_logp,
                kl_beta=cfg.kl_beta,
                agg=cfg.agg,
            )
            if real and not math.isfinite(metrics["loss"]) and not bad_samples:
                bad_samples = [samples[i].sample_id for i in group]
            # FSDP and DDP average gradients over ranks; × world turns that average back into the sum
            # of every micro-batch's share of the global batch.
            scale = losses.aggregation_units(cfg.agg, mb.mask) / units * dist.world if real else 0.0
            (loss * scale).backward()
            if real:
                # Padding copies count in the loss's denominator only, never as samples in the metrics.
                trained = sum(1 for i in group if not samples[i].pad)
                stats.setdefault(mb.role, RoleStats()).add(metrics, trained, time.perf_counter() - started)
        # Every rank decides together, or the others would wait for a collective that never comes.
        if float(dist.max(torch.tensor([1.0 if bad_samples else 0.0]))[0]) > 0:
            where = f" on samples {', '.join(bad_samples)}" if bad_samples else " on another rank"
            raise FloatingPointError(f"step {cfg.step}, global batch {batch_no}: the loss is not finite{where}; no step taken")
        optimizer_started = time.perf_counter()
        grad_norm = float(policy.clip_grad(cfg.max_grad_norm if cfg.max_grad_norm > 0 else float("inf")))
        if not math.isfinite(grad_norm):
            policy.optimizer.zero_grad(set_to_none=True)
            raise FloatingPointError(f"step {cfg.step}, global batch {batch_no}: gradient norm is {grad_norm}; no step taken")
        policy.optimizer.step()
        policy.optimizer.zero_grad(set_to_none=True)
        # Forward/backward time is counted per micro-batch; the optimizer step is shared by its roles.
        share = (time.perf_counter() - optimizer_started) / len(roles_in_batch)
        for role in roles_in_batch:
            role_stats = stats.setdefault(role, RoleStats())
            role_stats.grad_norms.append(grad_norm)
            role_stats.seconds += share
        log(f"global batch {batch_no}: {len(in_batch)} samples, grad norm {grad_norm:.4g}")
    return stats


def _gather_proximal(proximal: Dict[int, List[float]], dist: Dist) -> Dict[int, List[float]]:
    if dist.world == 1:
        return proximal
    import torch.distributed as tdist

    parts: List[Any] = [None] * dist.world
    tdist.all_gather_object(parts, proximal)
    merged: Dict[int, List[float]] = {}
    for part in parts:
        merged.update(part)
    return merged


def peak_memory_bytes(device: torch.device) -> int:
    """This process's peak memory in bytes: on CUDA the most the caching allocator had allocated to tensors
    (``torch.cuda.max_memory_allocated``; its reserved pool is larger), elsewhere the peak resident set
    (``ru_maxrss``: KiB on Linux, bytes on macOS), which includes the interpreter and PyTorch itself.
    0 where neither is available (no ``resource`` module)."""
    if device.type == "cuda":
        return int(torch.cuda.max_memory_allocated(device))
    try:
        import resource
    except ImportError:
        return 0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(rss if sys.platform == "darwin" else rss * 1024)


def update_performance(stats: Dict[str, RoleStats], seconds: float, dist: Dist) -> Dict[str, Any]:
    """Throughput and memory of the whole update, every role together (the same values on each role's row).

    ``update_seconds``: wall time of :func:`run_update` (proximal pass, forward/backward, optimizer steps;
    not the model load or the checkpoint), the slowest rank's. ``tokens_per_second``: trained tokens
    (loss mask 1, padding copies excluded; ``stats`` already reduced over ranks) per second of it.
    ``peak_memory_bytes``: :func:`peak_memory_bytes`, the largest rank's.
    """
    seconds = float(dist.max(torch.tensor([seconds], dtype=torch.float64))[0])
    peak = float(dist.max(torch.tensor([float(peak_memory_bytes(dist.device))], dtype=torch.float64))[0])
    tokens = sum(s.tokens for s in stats.values())
    return {
        "update_seconds": seconds,
        "tokens_per_second": tokens / seconds if seconds > 0 else 0.0,
        "peak_memory_bytes": int(peak),
    }


# ---------------------------------------------------------------------------------------------------------
# Checkpoints


def read_latest(checkpoint_dir: str) -> Optional[Dict[str, Any]]:
    """``{"version", "step"}`` of the newest published version, or None for a fresh run."""
    path = os.path.join(checkpoint_dir, LATEST_FILE)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def _write_json_atomic(path: str, value: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(value, f)
    os.replace(tmp, path)


def _autocast_for(device: torch.device) -> Callable[[], Any]:
    if device.type == "cuda":
        return lambda: torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext


def build_policy(cfg: TrainConfig, dist: Dist, vocab_check: Callable[[int], None]) -> Tuple[Policy, nn.Module]:
    """Load base model, earlier version and optimizer state; wrap for FSDP when world > 1.

    Returns the :class:`Policy` and the unwrapped model (for saving). Master weights are float32 for full
    fine-tuning (an lr of 1e-6 vanishes in bf16); a LoRA base is bf16 on CUDA.
    """
    latest = read_latest(cfg.checkpoint_dir)
    lora = cfg.lora_rank > 0
    base_dtype = torch.bfloat16 if (lora and dist.device.type == "cuda") else torch.float32
    tiny = models.is_tiny(cfg.model_path)
    latest_dir = os.path.join(cfg.checkpoint_dir, latest["version"]) if latest else None
    if lora:
        model = models.load_base_model(cfg.model_path, seed=cfg.seed, dtype=base_dtype)
        if latest_dir:
            model = models.load_lora(model, latest_dir)
        else:
            model = models.apply_lora(model, cfg.lora_rank, cfg.lora_alpha, cfg.lora_targets)
        for p in model.parameters():
            if p.requires_grad:
                p.data = p.data.float()
    elif latest_dir and not tiny:
        model = models.load_base_model(latest_dir, seed=cfg.seed, dtype=torch.float32)
    else:
        model = models.load_base_model(cfg.model_path, seed=cfg.seed, dtype=torch.float32)
        if latest_dir:
            model.load_state_dict(torch.load(os.path.join(latest_dir, TINY_WEIGHTS), map_location="cpu"))
    vocab_check(models.vocab_size(model))
    models.prepare_for_training(model, cfg.gradient_checkpointing)
    # Under FSDP each rank moves only its shards to the GPU (device_id); elsewhere the whole model moves.
    sharded = dist.world > 1 and dist.device.type == "cuda"
    if not sharded:
        model.to(dist.device)

    reference: Optional[Callable[[MicroBatch], torch.Tensor]] = None
    autocast = _autocast_for(dist.device)
    module: nn.Module = models.PolicyLogprobs(model, logprobs_fused)
    ref_module: Optional[nn.Module] = None
    if cfg.kl_beta > 0 and not lora:
        ref_model = models.load_base_model(cfg.model_path, seed=cfg.seed, dtype=torch.float32)
        if not sharded:
            ref_model.to(dist.device)
        ref_model.eval()
        for p in ref_model.parameters():
            p.requires_grad_(False)
        ref_module = models.PolicyLogprobs(ref_model, logprobs_fused)

    if sharded:
        module, ref_module = _wrap_fsdp(module, ref_module, lora, dist)
    elif dist.world > 1:
        # CPU processes (the tests): replicated weights, gradients all-reduced over gloo. The sharding
        # of micro-batches over ranks, the loss scaling and the metric reductions are the FSDP path's.
        module = nn.parallel.DistributedDataParallel(module)
    params = [p for p in module.parameters() if p.requires_grad]
    # Adam with decoupled weight decay (AdamW), constant lr: the authors' OPTIMIZER_ARGS.
    optimizer = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(cfg.adam_beta1, cfg.adam_beta2))
    if latest_dir:
        opt_path = os.path.join(latest_dir, TRAINER_DIR, _optimizer_file(dist))
        if os.path.exists(opt_path):
            optimizer.load_state_dict(torch.load(opt_path, map_location="cpu"))
            for group in optimizer.param_groups:
                group["lr"] = cfg.lr
                group["weight_decay"] = cfg.weight_decay
                group["betas"] = (cfg.adam_beta1, cfg.adam_beta2)
        else:
            log(f"no optimizer state at {opt_path}: AdamW starts from zero moments")

    if cfg.kl_beta > 0:
        if lora:
            peft_model = model

            def reference(mb: MicroBatch) -> torch.Tensor:
                with torch.no_grad(), peft_model.disable_adapter():
                    return response_logprobs(module, mb, autocast)

        else:
            frozen = ref_module

            def reference(mb: MicroBatch) -> torch.Tensor:
                with torch.no_grad():
                    return response_logprobs(frozen, mb, autocast)

    if _is_fsdp(module):
        clip_grad = lambda limit: module.clip_grad_norm_(limit)  # noqa: E731  (FSDP's sharded norm)
    else:
        clip_grad = lambda limit: torch.nn.utils.clip_grad_norm_(params, limit)  # noqa: E731
    return Policy(module, params, optimizer, reference, autocast, clip_grad), model


def _optimizer_file(dist: Dist) -> str:
    return "optimizer.pt" if dist.world == 1 else f"optimizer.rank{dist.rank}-of{dist.world}.pt"


def _wrap_fsdp(
    module: nn.Module, ref_module: Optional[nn.Module], lora: bool, dist: Dist
) -> Tuple[nn.Module, Optional[nn.Module]]:
    """FSDP with float32 master weights, bf16 compute, one shard unit per ≥ 10M parameters."""
    import functools

    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp import MixedPrecision
    from torch.distributed.fsdp.wrap import size_based_auto_wrap_policy

    kwargs: Dict[str, Any] = {
        "auto_wrap_policy": functools.partial(size_based_auto_wrap_policy, min_num_params=10_000_000),
        "device_id": dist.device if dist.device.type == "cuda" else None,
    }
    if dist.device.type == "cuda":
        kwargs["mixed_precision"] = MixedPrecision(
            param_dtype=torch.bfloat16, reduce_dtype=torch.float32, buffer_dtype=torch.bfloat16
        )
    if lora:
        # Frozen base and trainable adapter in one flat parameter need use_orig_params (PyTorch >= 2.0).
        if "use_orig_params" not in FSDP.__init__.__code__.co_varnames:
            raise ValueError("grpo.trainer_gpus > 1 with LoRA needs PyTorch >= 2.0 (FSDP use_orig_params)")
        kwargs["use_orig_params"] = True
    wrapped = FSDP(module, **kwargs)
    ref_wrapped = FSDP(ref_module, **kwargs) if ref_module is not None else None
    return wrapped, ref_wrapped


def _is_fsdp(module: nn.Module) -> bool:
    return type(module).__name__ == "FullyShardedDataParallel"


def _full_state_dict(policy: Policy, dist: Dist) -> Optional[Dict[str, torch.Tensor]]:
    """The policy's full state (on rank 0; None on other ranks), keys without the wrappers."""
    module = policy.module
    if isinstance(module, nn.parallel.DistributedDataParallel):
        if not dist.main:
            return None
        state = module.module.state_dict()
    elif _is_fsdp(module):
        from torch.distributed.fsdp import FullStateDictConfig, StateDictType
        from torch.distributed.fsdp import FullyShardedDataParallel as FSDP

        with FSDP.state_dict_type(module, StateDictType.FULL_STATE_DICT, FullStateDictConfig(offload_to_cpu=True, rank0_only=True)):
            state = module.state_dict()
        if not dist.main:
            return None
    else:
        state = module.state_dict()
    prefix = "policy."
    return {k[len(prefix) :] if k.startswith(prefix) else k: v for k, v in state.items()}


def save_version(cfg: TrainConfig, policy: Policy, model: nn.Module, version_dir: str, dist: Dist) -> None:
    """Write the new weights (adapter, HF checkpoint or tiny state dict) and this rank's optimizer state."""
    state = _full_state_dict(policy, dist)
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
    torch.save(policy.optimizer.state_dict(), os.path.join(version_dir, TRAINER_DIR, _optimizer_file(dist)))
    dist.barrier()


def have_safetensors() -> bool:
    """Whether the ``safetensors`` module is importable (Debian's python3 ships without it)."""
    import importlib.util

    return importlib.util.find_spec("safetensors") is not None


def prune_versions(checkpoint_dir: str, prefix: str, keep: int, current: str) -> None:
    """Delete all but the newest ``keep`` version directories of this prefix (never ``current``)."""
    if keep <= 0:
        return
    versions = sorted(
        d for d in os.listdir(checkpoint_dir) if d.startswith(prefix + "-step") and os.path.isdir(os.path.join(checkpoint_dir, d))
    )
    for old in versions[:-keep]:
        if old != current:
            shutil.rmtree(os.path.join(checkpoint_dir, old), ignore_errors=True)


# ---------------------------------------------------------------------------------------------------------
# Entry point


def train(cfg: TrainConfig, batch_path: str, metrics_path: str) -> List[Dict[str, Any]]:
    """One update (see the module doc); returns and writes the per-role metric rows."""
    dist = init_dist()
    started = time.perf_counter()
    batch = batchfile.read_batch(batch_path)
    if batch.step != cfg.step:
        raise ValueError(f"batch file is for step {batch.step}, the trainer was asked for step {cfg.step}")
    os.makedirs(cfg.checkpoint_dir, exist_ok=True)
    version = publishing.version_name(cfg.publish.name_prefix, cfg.step)
    version_dir = os.path.join(cfg.checkpoint_dir, version)

    latest = read_latest(cfg.checkpoint_dir)
    if latest is not None and int(latest["step"]) >= cfg.step:
        if int(latest["step"]) > cfg.step:
            raise ValueError(
                f"{cfg.checkpoint_dir} already holds step {latest['step']} ({latest['version']}); "
                f"step {cfg.step} would train on top of a later update (use a new checkpoint_dir for a new run)"
            )
        log(f"step {cfg.step} is already {latest['version']}: re-emitting its metrics")
        with open(os.path.join(version_dir, TRAINER_DIR, METRICS_FILE)) as f:
            rows = [json.loads(line) for line in f if line.strip()]
        if dist.main:
            _write_rows(metrics_path, rows)
        return rows

    torch.manual_seed(cfg.seed + cfg.step)
    policy, model = build_policy(cfg, dist, lambda vocab: batchfile.check_vocab(batch, vocab))
    log(
        f"step {cfg.step}: {len(batch.samples)} samples, {len({s.batch for s in batch.samples})} global batches, "
        f"{sum(p.numel() for p in policy.params):,} trainable parameters on {dist.device} x{dist.world}"
    )
    update_started = time.perf_counter()
    stats = run_update(cfg, batch.samples, policy, dist)
    update_seconds = time.perf_counter() - update_started
    for s in stats.values():
        s.reduce(dist)
    performance = update_performance(stats, update_seconds, dist)
    log(
        f"step {cfg.step}: {performance['tokens_per_second']:,.0f} trained tokens/s over {performance['update_seconds']:.1f}s, "
        f"peak memory {performance['peak_memory_bytes'] / 2**20:,.0f} MiB"
    )

    save_version(cfg, policy, model, version_dir, dist)
    rows = [{**stats[role].row(role, cfg.lr, version), **performance} for role in batchfile.ROLES if role in stats]
    if dist.main:
        with open(os.path.join(version_dir, TRAINER_DIR, METRICS_FILE), "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
        pub = cfg.publish
        if pub.mode == publishing.MODE_LORA:
            publishing.publish_vllm_lora(
                pub.base_url,
                version,
                version_dir,
                previous=latest["version"] if latest else None,
                timeout_s=pub.timeout_s,
                log=log,
            )
        elif pub.mode == publishing.MODE_SGLANG:
            publishing.publish_sglang(pub.urls, version_dir, timeout_s=max(pub.timeout_s, 600.0), log=log)
        elif pub.mode == publishing.MODE_VLLM_RELOAD:
            publishing.publish_vllm_reload(pub.urls, version_dir, timeout_s=max(pub.timeout_s, 600.0), log=log)
        elif pub.mode == publishing.MODE_COMMAND:
            fields_ = {"weights_dir": os.path.abspath(version_dir), "version": version, "step": str(cfg.step), "base_url": pub.base_url}
            publishing.publish_command(pub.command, fields_, log=log)
        _write_json_atomic(os.path.join(cfg.checkpoint_dir, LATEST_FILE), {"version": version, "step": cfg.step})
        prune_versions(cfg.checkpoint_dir, cfg.publish.name_prefix, cfg.keep_versions, version)
        _write_rows(metrics_path, rows)
        log(f"step {cfg.step}: published {version} in {time.perf_counter() - started:.1f}s")
    dist.barrier()
    return rows


def _write_rows(path: str, rows: List[Dict[str, Any]]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    os.replace(tmp, path)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="spade_trainer.train", description="One GRPO update from a batch file.")
    parser.add_argument("--batch", required=True, help="the .npz batch file (spade_trainer.batch)")
    parser.add_argument("--config", required=True, help="JSON trainer config (TrainConfig)")
    parser.add_argument("--metrics", required=True, help="where to write one JSON line of metrics per role")
    parser.add_argument("--error-file", default="", help="where to write the error message on failure")
    args = parser.parse_args(argv)
    try:
        with open(args.config) as f:
            cfg = TrainConfig.from_dict(json.load(f))
        train(cfg, args.batch, args.metrics)
        return 0
    except Exception as exc:  # the message goes to the Go side; the traceback to the log
        message = f"{type(exc).__name__}: {exc}" if not isinstance(exc, (ValueError, publishing.PublishError)) else str(exc)
        if not isinstance(exc, (batchfile.BatchError, ValueError, publishing.PublishError)):
            traceback.print_exc()
        log(f"error: {message}")
        if args.error_file and int(os.environ.get("RANK", "0")) == 0:
            with open(args.error_file, "w") as f:
                f.write(message)
        return 1


if __name__ == "__main__":
    sys.exit(main())
