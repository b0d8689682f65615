"""Triton kernels for ``log p(y_n) = z_{n,y_n} − logsumexp_v z_{n,v}`` (forward and backward).

Importing this module needs Triton; :func:`spade_trainer.logprobs.logprobs_fused` imports it only when
Triton and CUDA are available. One program handles one row: it streams the row's logits in blocks of
``BLOCK`` columns, keeps a running max and a rescaled running sum in float32 (online logsumexp), and writes
one float32 log-prob and one float32 logsumexp per row. The backward program streams the row again and
writes ``g_n · ([v = y_n] − exp(z_{n,v} − lse_n))`` in the logits' dtype. Neither materialises the
[N, V] float32 log-softmax: the extra memory is 8 bytes per row.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import torch
import triton
import triton.language as tl

#: Largest block of vocabulary columns one program loads at a time.
MAX_BLOCK = 4096


@triton.jit
def _logprobs_fwd_kernel(
    logits_ptr,
    targets_ptr,
    out_ptr,
    lse_ptr,
    stride_row,
    vocab,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * stride_row
    target = tl.load(targets_ptr + row)
    offsets = tl.arange(0, BLOCK)
    running_max = float("-inf")
    running_sum = 0.0
    for start in range(0, vocab, BLOCK):
        cols = start + offsets
        block = tl.load(row_ptr + cols, mask=cols < vocab, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(running_max, tl.max(block, axis=0))
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.sum(tl.exp(block - new_max), axis=0)
        running_max = new_max
    lse = running_max + tl.log(running_sum)
    target_logit = tl.load(row_ptr + target).to(tl.float32)
    tl.store(out_ptr + row, target_logit - lse)
    tl.store(lse_ptr + row, lse)


@triton.jit
def _logprobs_bwd_kernel(
    logits_ptr,
    targets_ptr,
    lse_ptr,
    grad_out_ptr,
    grad_logits_ptr,
    stride_row,
    stride_grad_row,
    vocab,
    BLOCK: tl.constexpr,
):
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * stride_row
    grad_row_ptr = grad_logits_ptr + row * stride_grad_row
    target = tl.load(targets_ptr + row)
    lse = tl.load(lse_ptr + row)
    grad_out = tl.load(grad_out_ptr + row).to(tl.float32)
    offsets = tl.arange(0, BLOCK)
    for start in range(0, vocab, BLOCK):
        cols = start + offsets
        inside = cols < vocab
        block = tl.load(row_ptr + cols, mask=inside, other=0.0).to(tl.float32)
        probs = tl.exp(block - lse)
        onehot = tl.where(cols == target, 1.0, 0.0)
        grad = grad_out * (onehot - probs)
        tl.store(grad_row_ptr + cols, grad.to(grad_logits_ptr.dtype.element_ty), mask=inside)


def _block_and_warps(vocab: int) -> Tuple[int, int]:
    block = max(16, min(MAX_BLOCK, triton.next_power_of_2(vocab)))
    warps = 8 if block >= 2048 else 4
    return block, warps


class _TritonLogprobs(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        if logits.stride(-1) != 1:
            logits = logits.contiguous()
        targets = targets.contiguous().long()
        rows, vocab = logits.shape
        out = torch.empty(rows, dtype=torch.float32, device=logits.device)
        lse = torch.empty(rows, dtype=torch.float32, device=logits.device)
        block, warps = _block_and_warps(vocab)
        if rows > 0:
            _logprobs_fwd_kernel[(rows,)](
                logits, targets, out, lse, logits.stride(0), vocab, BLOCK=block, num_warps=warps
            )
        ctx.save_for_backward(logits, targets, lse)
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> Tuple[Optional[torch.Tensor], None]:  # type: ignore[override]
        logits, targets, lse = ctx.saved_tensors
        rows, vocab = logits.shape
        grad_out = grad_out.contiguous()
        grad_logits = torch.empty_like(logits)
        block, warps = _block_and_warps(vocab)
        if rows > 0:
            _logprobs_bwd_kernel[(rows,)](
                logits,
                targets,
                lse,
                grad_out,
                grad_logits,
                logits.stride(0),
                grad_logits.stride(0),
                vocab,
                BLOCK=block,
                num_warps=warps,
            )
        return grad_logits, None


def logprobs_triton(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Fused ``z_{n,y_n} − logsumexp_v z_{n,v}`` on CUDA: logits [N, V] (fp32/bf16/fp16) → float32 [N].

    Targets must lie in [0, V) (the trainer validates token ids before any forward pass).
    """
    if not logits.is_cuda:
        raise ValueError("logprobs_triton: logits must be on a CUDA device")
    return _TritonLogprobs.apply(logits, targets)
