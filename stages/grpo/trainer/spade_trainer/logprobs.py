"""Log-probabilities of chosen tokens from logits: ``log softmax(z)[y] = z_y − logsumexp(z)``.

Three implementations of one formula, all returning float32 [N] (float64 for float64 logits) from logits
[N, V] (any float dtype) and targets [N] (int64):

- :func:`logprobs_reference`: plain PyTorch; materialises the float32 log-softmax [N, V]. The reference.
- :func:`logprobs_chunked`: a PyTorch autograd function that walks the vocabulary in chunks with an online
  logsumexp, saves only the logits and one float32 per row, and recomputes the softmax chunk by chunk in
  backward. Memory: one [N, chunk] float32 buffer instead of [N, V]. The CPU path.
- ``spade_trainer.triton_logprobs.logprobs_triton``: the same algorithm as one Triton program per row
  (forward and backward), used on CUDA when Triton is installed.

:func:`logprobs_fused` picks Triton when it can and the chunked path otherwise.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import torch

#: Vocabulary columns per chunk on the PyTorch path (a [N, 8192] float32 buffer).
DEFAULT_CHUNK = 8192


def logprobs_reference(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """``log p(y_n) = z_{n,y_n} − log Σ_v exp(z_{n,v})`` via the full float32 log-softmax.

    logits [N, V] → float32 [N]. Plain PyTorch; the reference every other version is tested against.
    """
    _check(logits, targets)
    logsm = torch.log_softmax(logits.to(_acc_dtype(logits)), dim=-1)
    return logsm.gather(-1, targets.long().unsqueeze(-1)).squeeze(-1)


def _acc_dtype(logits: torch.Tensor) -> torch.dtype:
    """Accumulation dtype: float32, or float64 for float64 logits (for gradcheck and references)."""
    return torch.float64 if logits.dtype == torch.float64 else torch.float32


def _check(logits: torch.Tensor, targets: torch.Tensor) -> None:
    if logits.dim() != 2 or targets.dim() != 1 or logits.shape[0] != targets.shape[0]:
        raise ValueError(
            f"logprobs: want logits [N, V] and targets [N], got {tuple(logits.shape)} and {tuple(targets.shape)}"
        )


def _online_logsumexp(logits: torch.Tensor, chunk: int) -> torch.Tensor:
    """``logsumexp_v z_{n,v}`` in float32 (float64 for float64 logits), one vocabulary chunk at a time (running max and rescaled sum)."""
    rows, vocab = logits.shape
    acc = _acc_dtype(logits)
    running_max = torch.full((rows,), float("-inf"), dtype=acc, device=logits.device)
    running_sum = torch.zeros((rows,), dtype=acc, device=logits.device)
    for start in range(0, vocab, chunk):
        block = logits[:, start : start + chunk].to(acc)
        block_max = block.max(dim=-1).values
        new_max = torch.maximum(running_max, block_max)
        # exp(-inf - -inf) would be nan on the first chunk; the sum is 0 there anyway.
        scale = torch.where(running_sum > 0, torch.exp(running_max - new_max), torch.zeros_like(running_sum))
        running_sum = running_sum * scale + torch.exp(block - new_max.unsqueeze(-1)).sum(dim=-1)
        running_max = new_max
    return running_max + torch.log(running_sum)


class _ChunkedLogprobs(torch.autograd.Function):
    """Autograd for the chunked path: ``∂ log p(y_n) / ∂ z_{n,v} = [v = y_n] − softmax(z_n)_v``."""

    @staticmethod
    def forward(ctx: Any, logits: torch.Tensor, targets: torch.Tensor, chunk: int) -> torch.Tensor:  # type: ignore[override]
        lse = _online_logsumexp(logits, chunk)
        target_logits = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1).to(lse.dtype)
        ctx.save_for_backward(logits, targets, lse)
        ctx.chunk = chunk
        return target_logits - lse

    @staticmethod
    def backward(ctx: Any, grad_out: torch.Tensor) -> Tuple[Optional[torch.Tensor], None, None]:  # type: ignore[override]
        logits, targets, lse = ctx.saved_tensors
        chunk: int = ctx.chunk
        rows, vocab = logits.shape
        grad_logits = torch.empty_like(logits)
        grad_out = grad_out.to(lse.dtype)
        row_index = torch.arange(rows, device=logits.device)
        for start in range(0, vocab, chunk):
            stop = min(start + chunk, vocab)
            probs = torch.exp(logits[:, start:stop].to(lse.dtype) - lse.unsqueeze(-1))
            block = -grad_out.unsqueeze(-1) * probs
            local = targets - start
            inside = (local >= 0) & (local < stop - start)
            block[row_index[inside], local[inside]] += grad_out[inside]
            grad_logits[:, start:stop] = block.to(logits.dtype)
        return grad_logits, None, None


def logprobs_chunked(logits: torch.Tensor, targets: torch.Tensor, chunk: int = DEFAULT_CHUNK) -> torch.Tensor:
    """``log p(y_n) = z_{n,y_n} − logsumexp_v z_{n,v}`` without the [N, V] float32 log-softmax.

    The logsumexp is accumulated online over vocabulary chunks; backward recomputes
    ``[v = y_n] − exp(z_{n,v} − lse_n)`` per chunk and writes the gradient in the logits' dtype.
    logits [N, V] (float32/bf16/fp16; float64) → float32 [N] (float64). Targets must lie in [0, V).
    """
    _check(logits, targets)
    if chunk <= 0:
        raise ValueError(f"logprobs_chunked: chunk must be positive, got {chunk}")
    return _ChunkedLogprobs.apply(logits, targets.long(), chunk)


_triton_impl: Any = None
_triton_checked = False


def triton_available() -> bool:
    """True when Triton imports and CUDA is usable (the fused kernel can run)."""
    global _triton_impl, _triton_checked
    if not _triton_checked:
        _triton_checked = True
        if torch.cuda.is_available():
            try:
                from spade_trainer import triton_logprobs

                _triton_impl = triton_logprobs.logprobs_triton
            except ImportError:
                _triton_impl = None
    return _triton_impl is not None


def logprobs_fused(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Log-probs of ``targets`` under ``softmax(logits)``, float32 [N], fused where possible.

    CUDA tensors with Triton installed go through the Triton kernel; everything else through
    :func:`logprobs_chunked`. Same formula and gradient as :func:`logprobs_reference`.
    """
    if logits.is_cuda and triton_available():
        _check(logits, targets)
        return _triton_impl(logits, targets)
    return logprobs_chunked(logits, targets)
