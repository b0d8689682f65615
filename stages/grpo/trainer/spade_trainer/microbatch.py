"""Micro-batches: samples grouped under a padded-token budget and collated into padded tensors.

A micro-batch holds samples of one role, right padded to its longest prompt + response. The policy's
logits are computed only at the positions that predict response tokens (``rows``, ``cols``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Sequence

import torch
from torch import nn

from spade_trainer import batch as batchfile


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
    mask: torch.Tensor  # [B, R] 1 on trained response tokens
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
