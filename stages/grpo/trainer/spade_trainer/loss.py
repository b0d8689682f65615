"""The GRPO update's formulas (SPADE §2.3; docs/architecture.md, "Formulas"): one function per formula.

Every function takes and returns float tensors; shapes use B (samples) and T (response tokens, right
padded). ``mask`` is 1.0 on the response tokens that are trained on and 0.0 on padding. The entry point
other tools call is :func:`grpo_loss`::

    from spade_trainer.loss import grpo_loss
    loss, metrics = grpo_loss(logp, behaviour_logp, advantages, mask, kl_beta=0.005)

Only PyTorch is needed (1.13 or 2.x).
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple, Union

import torch

#: Log-ratios are clamped to ±LOG_RATIO_LIMIT before exp so that one stale token cannot overflow to inf
#: (the same guard as verl's ``negative_approx_kl`` clamp); the gradient is zero beyond the clamp.
LOG_RATIO_LIMIT = 20.0

AGG_TOKEN_MEAN = "token-mean"
AGG_SEQ_MEAN_TOKEN_MEAN = "seq-mean-token-mean"


def compute_ratio(logp: torch.Tensor, behaviour_logp: torch.Tensor) -> torch.Tensor:
    """Importance ratio of the current policy to the behaviour policy, per token.

    ``r_t = exp(clamp(log π_θ(y_t) − log π_b(y_t), −20, 20))``

    Shapes: [B, T] → [B, T]. The gradient flows to ``logp`` only (``behaviour_logp`` is data).
    """
    log_ratio = (logp - behaviour_logp.detach()).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    return torch.exp(log_ratio)


def compute_clipped_surrogate(
    ratio: torch.Tensor, advantages: torch.Tensor, clip_low: float, clip_high: float
) -> torch.Tensor:
    """Per-token loss of the asymmetric clipped surrogate (PPO with DAPO's clip-higher).

    ``ℓ_t = −min(r_t · Â, clip(r_t, 1 − ε_low, 1 + ε_high) · Â)``

    ``ratio`` is [B, T]; ``advantages`` is [B] (one advantage per sample, broadcast over its tokens).
    With Â > 0 the clip engages where r_t > 1 + ε_high; with Â < 0 where r_t < 1 − ε_low; with Â = 0 the
    loss and its gradient are 0. Returns [B, T].
    """
    adv = advantages.detach().unsqueeze(-1)
    unclipped = ratio * adv
    clipped = ratio.clamp(1.0 - clip_low, 1.0 + clip_high) * adv
    return -torch.min(unclipped, clipped)


def compute_clip_mask_low(ratio: torch.Tensor, advantages: torch.Tensor, clip_low: float) -> torch.Tensor:
    """Tokens where the lower clip engages: ``Â < 0 and r_t < 1 − ε_low`` (no gradient there). [B, T] bool."""
    return (advantages.unsqueeze(-1) < 0) & (ratio < 1.0 - clip_low)


def compute_clip_mask_high(ratio: torch.Tensor, advantages: torch.Tensor, clip_high: float) -> torch.Tensor:
    """Tokens where the upper clip engages: ``Â > 0 and r_t > 1 + ε_high`` (no gradient there). [B, T] bool."""
    return (advantages.unsqueeze(-1) > 0) & (ratio > 1.0 + clip_high)


def compute_truncated_is_weight(
    logp: torch.Tensor, behaviour_logp: torch.Tensor, mask: torch.Tensor, cap: Union[float, torch.Tensor]
) -> torch.Tensor:
    """Truncated importance weight of each sample, for samples whose reward arrived late (the Designer).

    ``w_i = min(C, exp(mean_t(log π_θ(y_t) − log π_b(y_t))))``, detached.

    The per-sample ratio is the geometric mean of the token ratios (a length-normalised sequence ratio),
    so a 16k-token design does not over- or underflow. ``C = grpo.tis_cap`` (2.0), a float or a [B] tensor
    of per-sample caps. [B, T] → [B]; a sample with no masked token gets weight 1.
    """
    with torch.no_grad():
        tokens = mask.sum(-1)
        log_ratio = ((logp - behaviour_logp) * mask).sum(-1) / tokens.clamp(min=1.0)
        weight = torch.exp(log_ratio.clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT))
        weight = torch.minimum(weight, torch.as_tensor(cap, dtype=weight.dtype, device=weight.device))
        return torch.where(tokens > 0, weight, torch.ones_like(weight))


def compute_token_tis_weight(
    old_logp: torch.Tensor, rollout_logp: torch.Tensor, mask: torch.Tensor, cap: float
) -> torch.Tensor:
    """Token-level truncated importance weight of the trainer's policy over the inference engine's.

    ``w_it = min(C, exp(log π_old(y_t) − log π_rollout(y_t)))`` on masked tokens, 0 elsewhere; detached.

    ``old_logp`` are the trainer's own log-probs of the sampled tokens before the update (the same
    weights the server sampled with, computed by a different engine), ``rollout_logp`` those the server
    returned. The weight corrects the mismatch between the two engines, which every sample has (the
    authors' ``--use-tis``; slime's vanilla TIS clamps at ``tis_clip`` = ``grpo.tis_cap`` = 2). A ratio
    below 1 is kept as it is (no lower clamp). [B, T] → [B, T].
    """
    with torch.no_grad():
        log_ratio = (old_logp - rollout_logp).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
        weight = torch.exp(log_ratio).clamp(max=cap)
        return weight * mask.to(weight.dtype)


def compute_k3_kl(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """k3 estimator of KL[π_θ ‖ π_ref], per token (Schulman's unbiased, non-negative estimator).

    ``KL_t = exp(d) − d − 1`` with ``d = log π_ref(y_t) − log π_θ(y_t)`` (clamped to ±20).

    0 exactly where the two policies agree; the gradient flows to ``logp``. [B, T] → [B, T].
    """
    d = (ref_logp.detach() - logp).clamp(-LOG_RATIO_LIMIT, LOG_RATIO_LIMIT)
    return torch.exp(d) - d - 1.0


def aggregate_token_mean(per_token: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Token-mean over the batch: ``Σ_i Σ_t ℓ_it m_it / Σ_i Σ_t m_it`` (0 for an all-zero mask)."""
    return (per_token * mask).sum() / mask.sum().clamp(min=1.0)


def aggregate_seq_mean_token_mean(per_token: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over samples of each sample's token mean: ``(1/B') Σ_i (Σ_t ℓ_it m_it / Σ_t m_it)``.

    B' counts samples with at least one masked token; 0 when there is none. This is slime's
    ``sum_of_sample_mean`` reduction when the trainer divides the sum by B' = the global batch size (the
    trainer's ``sample_mean_denominator``: every sample of a full batch, inert padding included).
    """
    tokens = mask.sum(-1)
    per_sample = (per_token * mask).sum(-1) / tokens.clamp(min=1.0)
    present = (tokens > 0).to(per_token.dtype)
    return (per_sample * present).sum() / present.sum().clamp(min=1.0)


#: Loss aggregations, keyed by the value of the ``grpo.agg`` config key.
AGGREGATIONS: Dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    AGG_TOKEN_MEAN: aggregate_token_mean,
    AGG_SEQ_MEAN_TOKEN_MEAN: aggregate_seq_mean_token_mean,
}


def aggregation_units(agg: str, mask: torch.Tensor) -> float:
    """How many units an aggregation averages over: masked tokens (token-mean) or non-empty samples.

    Gradient accumulation scales each micro-batch's loss by ``units(micro) / units(global batch)`` so the
    accumulated gradient equals the gradient of the loss aggregated over the whole global batch.
    """
    if agg == AGG_TOKEN_MEAN:
        return float(mask.sum().item())
    if agg == AGG_SEQ_MEAN_TOKEN_MEAN:
        return float((mask.sum(-1) > 0).sum().item())
    raise ValueError(f"grpo.agg: unknown aggregation {agg!r} (want one of {sorted(AGGREGATIONS)})")


def _check_shapes(
    logp: torch.Tensor,
    behaviour_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    is_weights: Optional[torch.Tensor],
    ref_logp: Optional[torch.Tensor],
) -> None:
    if logp.dim() != 2:
        raise ValueError(f"grpo_loss: logp must be [B, T], got shape {tuple(logp.shape)}")
    for name, t in (("behaviour_logp", behaviour_logp), ("mask", mask), ("ref_logp", ref_logp)):
        if t is not None and t.shape != logp.shape:
            raise ValueError(f"grpo_loss: {name} has shape {tuple(t.shape)}, logp has {tuple(logp.shape)}")
    batch = logp.shape[0]
    if tuple(advantages.shape) != (batch,):
        raise ValueError(f"grpo_loss: advantages must be [B]=({batch},), got shape {tuple(advantages.shape)}")
    if is_weights is not None and tuple(is_weights.shape) not in ((batch,), tuple(logp.shape)):
        raise ValueError(
            f"grpo_loss: is_weights must be [B]=({batch},) or [B, T]={tuple(logp.shape)}, got shape {tuple(is_weights.shape)}"
        )


def grpo_loss(
    logp: torch.Tensor,
    behaviour_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    is_weights: Optional[torch.Tensor] = None,
    ref_logp: Optional[torch.Tensor] = None,
    kl_beta: float = 0.0,
    agg: str = AGG_TOKEN_MEAN,
) -> Tuple[torch.Tensor, Dict[str, float]]:
    """GRPO loss with asymmetric clipping, importance weights and a k3 KL penalty
    (docs/architecture.md, "Formulas").

    ``ℓ_it = w_it · −min(r_it Â_i, clip(r_it, 1 − ε_low, 1 + ε_high) Â_i) + β · (exp(d_it) − d_it − 1)``

    with ``r_it = exp(logp − behaviour_logp)``, ``d_it = ref_logp − logp`` and ``w_it`` the IS weight of the
    token (a [B, T] weight) or of its sample (a [B] weight; 1 when ``is_weights`` is None), aggregated by ``agg`` (``token-mean`` over every masked token
    of the batch, or ``seq-mean-token-mean``).

    Args:
        logp: [B, T] log-probs of the response tokens under the current policy (carries the gradient).
        behaviour_logp: [B, T] log-probs under the policy that sampled them.
        advantages: [B] one advantage per sample, broadcast over its tokens.
        mask: [B, T] 1.0 on trained response tokens, 0.0 on padding.
        clip_low, clip_high: ε_low, ε_high (``grpo.clip_low`` 0.20, ``grpo.clip_high`` 0.28).
        is_weights: [B] per-sample or [B, T] per-token importance weights (treated as constants), or None.
        ref_logp: [B, T] log-probs under the frozen reference; required when ``kl_beta`` > 0.
        kl_beta: β (``grpo.kl_beta``).
        agg: a key of :data:`AGGREGATIONS`.

    Returns:
        ``(loss, metrics)``: a scalar tensor with a gradient to ``logp``, and floats: ``loss``,
        ``pg_loss``, ``kl`` (token mean of k3; 0 without a reference), ``clip_frac`` (= low + high),
        ``clip_frac_low``, ``clip_frac_high`` (fractions of masked tokens), ``ratio_mean``, ``ratio_max``
        (over masked tokens), ``is_weight_mean`` (over samples with tokens) and ``tokens``. An all-zero
        mask gives a zero loss (with a gradient of zeros) and zero metrics.
    """
    _check_shapes(logp, behaviour_logp, advantages, mask, is_weights, ref_logp)
    if agg not in AGGREGATIONS:
        raise ValueError(f"grpo.agg: unknown aggregation {agg!r} (want one of {sorted(AGGREGATIONS)})")
    if kl_beta > 0 and ref_logp is None:
        raise ValueError("grpo_loss: kl_beta > 0 needs ref_logp")
    aggregate = AGGREGATIONS[agg]
    mask = mask.to(logp.dtype)
    advantages = advantages.to(logp.dtype)

    ratio = compute_ratio(logp, behaviour_logp)
    pg_per_token = compute_clipped_surrogate(ratio, advantages, clip_low, clip_high)
    if is_weights is not None:
        w = is_weights.detach().to(logp.dtype)
        pg_per_token = pg_per_token * (w if w.dim() == 2 else w.unsqueeze(-1))
    per_token = pg_per_token
    kl_per_token = None
    if ref_logp is not None:
        kl_per_token = compute_k3_kl(logp, ref_logp)
        if kl_beta > 0:
            per_token = per_token + kl_beta * kl_per_token
    loss = aggregate(per_token, mask)

    with torch.no_grad():
        tokens = float(mask.sum().item())
        token_mean = lambda t: float(aggregate_token_mean(t.to(mask.dtype), mask).item())  # noqa: E731
        on = mask > 0
        present = mask.sum(-1) > 0
        low = compute_clip_mask_low(ratio, advantages, clip_low)
        high = compute_clip_mask_high(ratio, advantages, clip_high)
        metrics = {
            "loss": float(loss.item()),
            "pg_loss": float(aggregate(pg_per_token, mask).item()),
            "kl": token_mean(kl_per_token) if kl_per_token is not None else 0.0,
            "clip_frac_low": token_mean(low),
            "clip_frac_high": token_mean(high),
            "ratio_mean": token_mean(ratio),
            "ratio_max": float(ratio[on].max().item()) if tokens > 0 else 0.0,
            "is_weight_mean": (
                (
                    token_mean(is_weights)
                    if is_weights.dim() == 2
                    else float(is_weights[present].float().mean().item())
                )
                if is_weights is not None and bool(present.any())
                else (1.0 if tokens > 0 else 0.0)
            ),
            "tokens": tokens,
        }
        metrics["clip_frac"] = metrics["clip_frac_low"] + metrics["clip_frac_high"]
    return loss, metrics
