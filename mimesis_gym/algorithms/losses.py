"""The PPO-clip core shared by every learner (docs/algorithms.md, "The PPO-clip core").

Per action token: ``ρ = exp(clamp(ℓ − ℓ_old, −20, 20))``, ``L1 = −A·ρ``,
``L2 = −A·clip(ρ, 1−ε_lo, 1+ε_hi)``, ``Lc = max(L1, L2)``; for ``A < 0`` the dual clip bounds the
loss by ``c·|A|`` (``c > 1``), a constant without gradient. Values at mask-0 positions never
influence the loss or its gradient.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import torch

__all__ = ["AGGREGATIONS", "aggregate", "aggregation_weights", "kl_penalty", "policy_loss", "token_losses"]

Aggregation = Literal["token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm"]
AGGREGATIONS = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")


def token_losses(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    dual_clip: float = 10.0,
) -> torch.Tensor:
    """Per-token clipped policy loss (same shape as ``logp``)."""
    if dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1, got {dual_clip}")
    ratio = torch.exp(torch.clamp(logp - old_logp, -20.0, 20.0))
    unclipped = -advantages * ratio
    clipped = -advantages * torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high)
    loss = torch.maximum(unclipped, clipped)
    bounded = torch.minimum(loss, dual_clip * advantages.abs())
    return torch.where(advantages < 0, bounded, loss)


def aggregation_weights(
    action_tokens: Sequence[int], agg: Aggregation, tokens: int, sequences: int, max_response_tokens: int | None
) -> list[float]:
    """Per-row weight ``w`` of each action token, so that a loss aggregates as ``Σ_rows w · Σ_tokens L``.

    See docs/algorithms.md, "Loss aggregation".

    ``action_tokens`` are the rows' action-token counts; ``tokens`` and ``sequences`` are the scope's
    action tokens and rows with at least one (the trainer passes the whole mini-batch on every rank for
    ``token_mean_scope="minibatch"``, so micro-batches and ranks add up to one mean). The only place a
    loss is aggregated: :func:`aggregate` and the trainer both use it.
    """
    if agg == "seq-mean-token-sum-norm" and not max_response_tokens:
        raise ValueError("seq-mean-token-sum-norm needs max_response_tokens")
    weights = []
    for count in action_tokens:
        if not count:
            weights.append(0.0)
        elif agg == "token-mean":
            weights.append(1.0 / max(1, tokens))
        elif agg == "seq-mean-token-mean":
            weights.append(1.0 / (max(1, sequences) * count))
        elif agg == "seq-mean-token-sum":
            weights.append(1.0 / max(1, sequences))
        elif agg == "seq-mean-token-sum-norm":
            weights.append(1.0 / (max(1, sequences) * max_response_tokens))  # type: ignore[operator]
        else:
            raise ValueError(f"agg must be one of {', '.join(AGGREGATIONS)}; got {agg!r}")
    return weights


def aggregate(
    losses: torch.Tensor, mask: torch.Tensor, agg: Aggregation = "token-mean", max_response_tokens: int | None = None
) -> torch.Tensor:
    """Reduce per-token losses of shape ``(B, T)`` with the action mask by :func:`aggregation_weights`."""
    if agg not in AGGREGATIONS:
        raise ValueError(f"agg must be one of {', '.join(AGGREGATIONS)}; got {agg!r}")
    mask = mask.to(losses.dtype)
    masked = torch.where(mask > 0, losses, torch.zeros_like(losses))  # mask-0 values never leak (not even NaN)
    counts = [int(n) for n in mask.sum(dim=-1).tolist()]
    weights = aggregation_weights(counts, agg, sum(counts), sum(1 for n in counts if n), max_response_tokens)
    return (masked.sum(dim=-1) * torch.tensor(weights, dtype=losses.dtype, device=losses.device)).sum()


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    *,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    dual_clip: float = 10.0,
    agg: Aggregation = "token-mean",
    max_response_tokens: int | None = None,
) -> torch.Tensor:
    """The aggregated PPO-clip loss with asymmetric clip and dual clip."""
    losses = token_losses(logp, old_logp, advantages, clip_low=clip_low, clip_high=clip_high, dual_clip=dual_clip)
    return aggregate(losses, mask, agg, max_response_tokens)


def kl_penalty(logp: torch.Tensor, ref_logp: torch.Tensor, kind: Literal["k1", "k2", "k3"] = "k3") -> torch.Tensor:
    """Per-token KL estimate to a frozen reference: k1 = ℓ − ℓ_ref, k2 = ½(ℓ − ℓ_ref)², k3 clamped to [−10, 10]."""
    diff = logp - ref_logp
    if kind == "k1":
        return diff
    if kind == "k2":
        return 0.5 * diff**2
    if kind == "k3":
        return torch.clamp(torch.exp(-diff) + diff - 1.0, -10.0, 10.0)
    raise ValueError(f"kind must be 'k1', 'k2' or 'k3'; got {kind!r}")
