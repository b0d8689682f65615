"""The trainer's entry point: one GRPO update from one batch file, then new weights published.

    python -m spade_trainer.train --batch step.npz --config trainer.json --metrics out.jsonl \
        [--error-file err.txt]

or, for ``grpo.trainer_gpus`` = N > 1, the same under ``python -m torch.distributed.run --nproc_per_node N``
(FSDP, full state saved by rank 0).

What one run does:

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

The pieces live beside this module: :mod:`spade_trainer.config` (the settings), :mod:`spade_trainer.distributed`
(ranks, FSDP), :mod:`spade_trainer.microbatch` (packing and collating) and :mod:`spade_trainer.checkpoints`
(versions on disk).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import sys
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Tuple

import torch
from torch import nn

from spade_trainer import batch as batchfile
from spade_trainer import checkpoints
from spade_trainer import loss as losses
from spade_trainer import model as models
from spade_trainer import publish as publishing
from spade_trainer.config import OFFLOAD_NONE, OFFLOAD_OPTIMIZER_PARAMS, PARAM_BFLOAT16, TIS_SEQUENCE, TIS_TOKEN, TrainConfig
from spade_trainer.optim import MasterAdamW
from spade_trainer.distributed import Dist, broadcast_object, full_state_dict, gather_dict, init_dist, is_fsdp, rank_share, wrap_fsdp
from spade_trainer.logprobs import logprobs_fused
from spade_trainer.microbatch import MicroBatch, collate, pack, response_logprobs


def log(msg: str) -> None:
    """One plain log line on stderr (the Go side streams it)."""
    print(f"spade-trainer: {msg}", file=sys.stderr, flush=True)


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
            for group, real in rank_share(pack(tis, samples, cfg.micro_batch_tokens), dist):
                mb = collate(group, samples, device)
                logp = response_logprobs(policy.module, mb, policy.autocast)
                if real:
                    for b, i in enumerate(group):
                        proximal[i] = logp[b, : len(samples[i].response_ids)].tolist()
        proximal = gather_dict(proximal, dist)
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
        for group, real in rank_share(groups, dist):
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
# The policy


def _autocast_for(device: torch.device) -> Callable[[], Any]:
    if device.type == "cuda":
        return lambda: torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext


def build_policy(
    cfg: TrainConfig, dist: Dist, vocab_check: Callable[[int], None], start: Optional[Dict[str, Any]] = None, resident: bool = False
) -> Tuple[Policy, nn.Module]:
    """Load base model, earlier version and optimizer state; wrap for FSDP when world > 1.

    ``start`` names the version to continue from (``{"version", "step"}``; a None version is the base
    model); by default the latest one. Returns the :class:`Policy` and the unwrapped model (for saving).
    Master weights are float32 for full fine-tuning (an lr of 1e-6 vanishes in bf16): the parameters
    themselves, or under ``param_dtype`` bfloat16 the optimizer's copy (:class:`spade_trainer.optim.MasterAdamW`,
    in host memory under ``cpu_offload``). A LoRA base is bf16 on CUDA.
    """
    latest = checkpoints.read_latest(cfg.checkpoint_dir) if start is None and not resident else start
    if latest is not None and latest.get("version") is None:
        latest = None
    lora = cfg.lora_rank > 0
    base_dtype = torch.bfloat16 if (lora and dist.device.type == "cuda") else torch.float32
    tiny = models.is_tiny(cfg.model_path)
    latest_dir = os.path.join(cfg.checkpoint_dir, latest["version"]) if latest else None
    if lora:
        model = models.load_base_model(cfg.model_path, seed=cfg.seed, dtype=base_dtype)
        if latest_dir:
            model = models.load_lora(model, latest_dir)
        else:
            model = models.apply_lora(model, cfg.lora_rank, cfg.lora_alpha)
        for p in model.parameters():
            if p.requires_grad:
                p.data = p.data.float()
    elif latest_dir and not tiny:
        model = models.load_base_model(latest_dir, seed=cfg.seed, dtype=torch.float32)
    else:
        model = models.load_base_model(cfg.model_path, seed=cfg.seed, dtype=torch.float32)
        if latest_dir:
            model.load_state_dict(torch.load(os.path.join(latest_dir, checkpoints.TINY_WEIGHTS), map_location="cpu"))
    vocab_check(models.vocab_size(model))
    if cfg.param_dtype == PARAM_BFLOAT16 and not lora:
        model.to(torch.bfloat16)
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
        ref_dtype = torch.bfloat16 if cfg.param_dtype == PARAM_BFLOAT16 else torch.float32
        ref_model = models.load_base_model(cfg.model_path, seed=cfg.seed, dtype=ref_dtype)
        if not sharded:
            ref_model.to(dist.device)
        ref_model.eval()
        for p in ref_model.parameters():
            p.requires_grad_(False)
        ref_module = models.PolicyLogprobs(ref_model, logprobs_fused)

    if sharded:
        module, ref_module = wrap_fsdp(module, ref_module, lora, dist, offload_params=not lora and cfg.cpu_offload == OFFLOAD_OPTIMIZER_PARAMS)
    elif dist.world > 1:
        # CPU processes (the tests): replicated weights, gradients all-reduced over gloo. The sharding
        # of micro-batches over ranks, the loss scaling and the metric reductions are the FSDP path's.
        module = nn.parallel.DistributedDataParallel(module)
    params = [p for p in module.parameters() if p.requires_grad]
    # Adam with decoupled weight decay (AdamW), constant lr: the authors' OPTIMIZER_ARGS.
    adamw = dict(lr=cfg.lr, weight_decay=cfg.weight_decay, betas=(cfg.adam_beta1, cfg.adam_beta2))
    optimizer: Any
    if not lora and (cfg.param_dtype == PARAM_BFLOAT16 or cfg.cpu_offload != OFFLOAD_NONE):
        master_device = torch.device("cpu") if cfg.cpu_offload != OFFLOAD_NONE else dist.device
        optimizer = MasterAdamW(params, master_device, **adamw)
    else:
        optimizer = torch.optim.AdamW(params, **adamw)
    if latest_dir and not checkpoints.restore_optimizer(optimizer, latest_dir, cfg, dist):
        log(f"no optimizer state in {latest_dir}: AdamW starts from zero moments")

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

    if is_fsdp(module):
        clip_grad = lambda limit: module.clip_grad_norm_(limit)  # noqa: E731  (FSDP's sharded norm)
    else:
        clip_grad = lambda limit: torch.nn.utils.clip_grad_norm_(params, limit)  # noqa: E731
    return Policy(module, params, optimizer, reference, autocast, clip_grad), model


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

    latest = checkpoints.read_latest(cfg.checkpoint_dir)
    if latest is not None and int(latest["step"]) >= cfg.step:
        if int(latest["step"]) > cfg.step:
            raise ValueError(
                f"{cfg.checkpoint_dir} already holds step {latest['step']} ({latest['version']}); "
                f"step {cfg.step} would train on top of a later update (use a new checkpoint_dir for a new run)"
            )
        log(f"step {cfg.step} is already {latest['version']}: re-emitting its metrics")
        rows = checkpoints.read_metrics(version_dir)
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

    state = full_state_dict(policy.module, dist)
    checkpoints.save_version(cfg, model, state, policy.optimizer, version_dir, dist)
    performance.update(io_performance(io_bytes(), (0, 0), dist))
    rows = [{**stats[role].row(role, cfg.lr, version), **performance} for role in batchfile.ROLES if role in stats]
    if dist.main:
        checkpoints.write_metrics(version_dir, rows)
        publish_version(cfg, cfg.step, version, version_dir, latest)
        _write_rows(metrics_path, rows)
        log(f"step {cfg.step}: published {version} in {time.perf_counter() - started:.1f}s")
    dist.barrier()
    return rows


def publish_version(cfg: TrainConfig, step: int, version: str, version_dir: str, latest: Optional[Dict[str, Any]]) -> None:
    """Hand the saved ``version`` to the servers as ``grpo.publish`` says, then mark it latest and prune the
    older versions (rank 0 only). ``latest`` is the version published before it (LoRA unloads it)."""
    pub = cfg.publish
    if pub.mode == publishing.MODE_LORA:
        publishing.publish_vllm_lora(pub.base_url, version, version_dir, previous=latest["version"] if latest else None, log=log)
    elif pub.mode == publishing.MODE_SGLANG:
        publishing.publish_sglang(pub.urls, version_dir, log=log)
    elif pub.mode == publishing.MODE_VLLM_RELOAD:
        publishing.publish_vllm_reload(pub.urls, version_dir, log=log)
    elif pub.mode == publishing.MODE_COMMAND:
        values = {"weights_dir": os.path.abspath(version_dir), "version": version, "step": str(step), "base_url": pub.base_url}
        publishing.publish_command(pub.command, values, log=log)
    checkpoints.write_latest(cfg.checkpoint_dir, version, step)
    checkpoints.prune_versions(cfg.checkpoint_dir, cfg.publish.name_prefix, checkpoints.KEEP_VERSIONS, version)


def io_bytes() -> Tuple[int, int]:
    """(read, written): the bytes this process has passed through read and write calls so far (``rchar``
    and ``wchar`` of /proc/self/io: checkpoints, batch files, the model load); (0, 0) where the file is
    missing (not Linux)."""
    try:
        with open("/proc/self/io") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return int(fields["rchar"]), int(fields["wchar"])
    except (OSError, KeyError, ValueError):
        return 0, 0


def io_performance(now: Tuple[int, int], before: Tuple[int, int], dist: Dist) -> Dict[str, int]:
    """``io_read_bytes`` and ``io_written_bytes`` between ``before`` and ``now`` (:func:`io_bytes`), summed over
    the ranks."""
    summed = dist.sum(torch.tensor([float(now[0] - before[0]), float(now[1] - before[1])], dtype=torch.float64))
    return {"io_read_bytes": int(summed[0]), "io_written_bytes": int(summed[1])}


# ---------------------------------------------------------------------------------------------------------
# The resident trainer


class Resident:
    """The state of a trainer that stays loaded across steps (``grpo.trainer_mode`` resident).

    On start it loads the newest full checkpoint (:func:`spade_trainer.checkpoints.read_full`; none: the base
    model) with its optimizer state; ``at`` is the step that state is as of (None for a fresh run). Each
    :meth:`train` updates the state in memory by one step. A step asked to ``publish`` saves its weights
    (only the weights, in the served dtype) and publishes them; a step asked for ``full`` writes a full
    checkpoint instead (float32 weights and optimizer state, ``full.json``). Steps re-trained after a crash
    (from their committed batches) are neither saved nor published: they rebuild the state.
    """

    def __init__(self, cfg: TrainConfig, dist: Dist) -> None:
        self.cfg, self.dist = cfg, dist
        full = checkpoints.read_full(cfg.checkpoint_dir, dist)
        self.at: Optional[int] = int(full["step"]) if full else None
        self.full_at: Optional[int] = self.at
        self.vocab = 0

        def keep_vocab(vocab: int) -> None:
            self.vocab = vocab

        self.policy, self.model = build_policy(cfg, dist, keep_vocab, start=full, resident=True)
        self.last_rows: List[Dict[str, Any]] = []
        where = f"the full checkpoint of step {self.at} ({full['version'] or 'the base model'})" if full else "the base model (a fresh run)"
        log(f"resident trainer loaded from {where}: {sum(p.numel() for p in self.policy.params):,} trainable parameters on {dist.device} x{dist.world}")

    def train(self, step: int, batch_path: str, save: bool, publish: bool, full: bool) -> List[Dict[str, Any]]:
        """One update from the batch file of ``step`` (after every step the state is at); returns its rows.
        ``save`` writes the step's weights, ``publish`` also hands them to the servers now (else
        :meth:`publish` does later), ``full`` writes a full checkpoint instead of the weights alone."""
        cfg, dist = self.cfg, self.dist
        if self.at is not None and step <= self.at:
            raise ValueError(f"the resident trainer's state is at step {self.at}; step {step} would train on top of a later update")
        io_before = io_bytes()
        started = time.perf_counter()
        batch = batchfile.read_batch(batch_path)
        if batch.step != step:
            raise ValueError(f"batch file is for step {batch.step}, the trainer was asked for step {step}")
        batchfile.check_vocab(batch, self.vocab)
        os.makedirs(cfg.checkpoint_dir, exist_ok=True)
        if self.at is None:
            # The base model is the state as of the step before the first one trained here.
            if dist.main:
                checkpoints.write_full(cfg.checkpoint_dir, None, step - 1)
            self.full_at = step - 1
        step_cfg = dataclasses.replace(cfg, step=step)
        torch.manual_seed(cfg.seed + step)
        update_started = time.perf_counter()
        stats = run_update(step_cfg, batch.samples, self.policy, dist)
        update_seconds = time.perf_counter() - update_started
        self.at = step
        for s in stats.values():
            s.reduce(dist)
        performance = update_performance(stats, update_seconds, dist)
        version = publishing.version_name(cfg.publish.name_prefix, step)
        version_dir = os.path.join(cfg.checkpoint_dir, version)
        if full:
            self.save_full()
        elif save or publish:
            state = full_state_dict(self.policy.module, dist)
            checkpoints.save_weights(cfg, self.model, state, version_dir, dist)
        performance.update(io_performance(io_bytes(), io_before, dist))
        rows = [{**stats[role].row(role, cfg.lr, version), **performance} for role in batchfile.ROLES if role in stats]
        self.last_rows = rows
        if dist.main and (save or publish or full):
            checkpoints.write_metrics(version_dir, rows)
        if dist.main and publish:
            publish_version(cfg, step, version, version_dir, checkpoints.read_latest(cfg.checkpoint_dir))
        dist.barrier()
        what = "published" if publish else "saved, to be published" if save else "re-trained from its batch (not published)"
        log(f"step {step}: {what}{', full checkpoint' if full else ''} in {time.perf_counter() - started:.1f}s")
        return rows

    def publish(self, step: int) -> None:
        """Publish the version of ``step``, saved by :meth:`train` without publishing (the colocated
        placement: the servers take their memory back first)."""
        if self.at != step:
            raise ValueError(f"publish of step {step}: the resident trainer's state is at step {self.at}")
        if self.dist.main:
            cfg = self.cfg
            version = publishing.version_name(cfg.publish.name_prefix, step)
            version_dir = os.path.join(cfg.checkpoint_dir, version)
            if not os.path.isdir(version_dir):
                raise ValueError(f"publish of step {step}: {version_dir} was not saved")
            publish_version(cfg, step, version, version_dir, checkpoints.read_latest(cfg.checkpoint_dir))
            log(f"step {step}: published {version}")
        self.dist.barrier()

    def save_full(self) -> None:
        """Write the state as of ``at`` as a full checkpoint (the version directory of that step, replaced)
        and name it in ``full.json``; nothing when it already is one."""
        if self.at is None or self.full_at == self.at:
            return
        cfg, dist = self.cfg, self.dist
        version = publishing.version_name(cfg.publish.name_prefix, self.at)
        version_dir = os.path.join(cfg.checkpoint_dir, version)
        state = full_state_dict(self.policy.module, dist)
        checkpoints.save_version(cfg, self.model, state, self.policy.optimizer, version_dir, dist)
        if dist.main:
            if self.last_rows:
                checkpoints.write_metrics(version_dir, self.last_rows)
            checkpoints.write_full(cfg.checkpoint_dir, version, self.at)
        dist.barrier()
        self.full_at = self.at


def serve(cfg: TrainConfig, address: str) -> int:
    """The resident trainer's loop: connect to the Unix socket ``address`` (rank 0), then answer one JSON
    line per request line until ``exit`` or the end of the stream (the Go side went away).

    Answers: first ``{"ready": true, "step": S, "full_step": F}`` (S, F: the step the loaded state is as of,
    null for a fresh run), or ``{"error": MSG}`` when loading failed. Requests:

    - ``{"op": "train", "step": N, "batch": PATH, "save": bool, "publish": bool, "full": bool}``:
      ``{"ok": true, "step": N, "rows": [...]}`` (the metric rows, as the per-step trainer writes them).
    - ``{"op": "publish", "step": N}``: publish the version step N saved; ``{"ok": true, "step": N}``.
    - ``{"op": "save"}``: a full checkpoint of the state unless it is one; ``{"ok": true, "step", "full_step"}``.
    - ``{"op": "exit"}``: no answer; the process exits 0.

    A failed request is answered ``{"ok": false, "error": MSG}`` and the process exits 1: its state may be
    half-updated, and the next one resumes from the last full checkpoint.
    """
    import socket

    dist = init_dist()
    stream = None
    if dist.main:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(address)
        stream = sock.makefile("rw", encoding="utf-8", newline="\n")

    def reply(message: Dict[str, Any]) -> None:
        if stream is not None:
            stream.write(json.dumps(message) + "\n")
            stream.flush()

    try:
        session = Resident(cfg, dist)
    except Exception as exc:
        reply({"error": _message(exc)})
        raise
    reply({"ready": True, "step": session.at, "full_step": session.full_at})
    while True:
        request: Dict[str, Any] = {"op": "exit"}
        if stream is not None:
            line = stream.readline()
            if line.strip():
                request = json.loads(line)
        request = broadcast_object(request, dist)
        op = request.get("op")
        if op == "exit":
            return 0
        try:
            if op == "train":
                rows = session.train(
                    int(request["step"]), str(request["batch"]), bool(request["save"]), bool(request["publish"]), bool(request["full"])
                )
                reply({"ok": True, "step": session.at, "rows": rows})
            elif op == "publish":
                session.publish(int(request["step"]))
                reply({"ok": True, "step": session.at})
            elif op == "save":
                session.save_full()
                reply({"ok": True, "step": session.at, "full_step": session.full_at})
            else:
                raise ValueError(f"resident trainer: unknown request {op!r}")
        except Exception as exc:
            if not isinstance(exc, (batchfile.BatchError, ValueError, publishing.PublishError)):
                traceback.print_exc()
            log(f"error: {_message(exc)}")
            reply({"ok": False, "error": _message(exc)})
            return 1


def _message(exc: BaseException) -> str:
    """The one-line message of a failure for the Go side (the type named unless it is an expected one)."""
    if isinstance(exc, (ValueError, publishing.PublishError)):
        return str(exc)
    return f"{type(exc).__name__}: {exc}"


def _write_rows(path: str, rows: List[Dict[str, Any]]) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    os.replace(tmp, path)


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="spade_trainer.train", description="One GRPO update from a batch file.")
    parser.add_argument("--batch", default="", help="the .npz batch file (spade_trainer.batch)")
    parser.add_argument("--config", required=True, help="the JSON trainer config (spade_trainer.config; every key required)")
    parser.add_argument("--metrics", default="", help="where to write one JSON line of metrics per role")
    parser.add_argument("--error-file", default="", help="where to write the error message on failure")
    parser.add_argument("--serve", default="", help="stay loaded: serve the requests of the Unix socket at this path (serve())")
    args = parser.parse_args(argv)
    try:
        with open(args.config) as f:
            cfg = TrainConfig.from_dict(json.load(f))
        if args.serve:
            return serve(cfg, args.serve)
        if not args.batch or not args.metrics:
            raise ValueError("spade_trainer.train: --batch and --metrics are required without --serve")
        train(cfg, args.batch, args.metrics)
        return 0
    except Exception as exc:  # the message goes to the Go side; the traceback to the log
        message = _message(exc)
        if not isinstance(exc, (batchfile.BatchError, ValueError, publishing.PublishError)):
            traceback.print_exc()
        log(f"error: {message}")
        if args.error_file and int(os.environ.get("RANK", "0")) == 0:
            with open(args.error_file, "w") as f:
                f.write(message)
        return 1


if __name__ == "__main__":
    sys.exit(main())
