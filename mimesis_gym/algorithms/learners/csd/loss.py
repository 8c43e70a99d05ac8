"""CSD — Coached On-Policy Self-Distillation: the gate and the loss term.

See docs/algorithms.md, "CSD — Coached On-Policy Self-Distillation".

For the agent's own sampled tokens of a coached turn, ``Δ = ℓ_T − sg(ℓ)`` compares the log-prob of a
stop-gradient teacher (the same weights, with the coaching note in context) with the student's.
The gate ``g = σ(β·Δ)`` is detached; ``L_CSD = −(1/N_c) Σ g·ℓ`` over the coached tokens (0 with a
valid graph when there are none). Its gradient is a positively weighted likelihood: CSD never
pushes a sampled token down.
"""

from __future__ import annotations

from typing import Literal

import torch

__all__ = ["csd_gate", "csd_loss", "csd_loss_release_form"]


def csd_gate(delta: torch.Tensor, beta: float = 5.0) -> torch.Tensor:
    """``σ(β·Δ)``, detached (0.5 everywhere when ``β = 0``)."""
    return torch.sigmoid(beta * delta.detach()).detach()


def csd_loss(
    logp: torch.Tensor,
    teacher_logp: torch.Tensor,
    coached: torch.Tensor,
    *,
    beta: float = 5.0,
    placebo_logp: torch.Tensor | None = None,
    estimator: Literal["gated", "reinforce"] = "gated",
    denominator: torch.Tensor | float | None = None,
) -> torch.Tensor:
    """The CSD term over coached tokens (mask ``coached``); gradients reach the model through ``logp``.

    ``teacher_logp`` comes from a no-grad forward; with ``placebo_logp`` the difference is
    ``ℓ_T(real) − ℓ_T(placebo)``. ``denominator`` defaults to the number of coached tokens (pass
    the mini-batch count for ``token_mean_scope="minibatch"``).
    """
    mask = coached.to(logp.dtype)
    reference = placebo_logp if placebo_logp is not None else logp
    delta = (teacher_logp - reference).detach()
    if estimator == "gated":
        weight = csd_gate(delta, beta)
    elif estimator == "reinforce":
        weight = delta
    else:
        raise ValueError(f"estimator must be 'gated' or 'reinforce'; got {estimator!r}")
    count = mask.sum() if denominator is None else torch.as_tensor(denominator, dtype=logp.dtype)
    terms = torch.where(mask > 0, weight * logp, torch.zeros_like(logp))
    return -terms.sum() / count.clamp(min=1)


def csd_loss_release_form(
    logp: torch.Tensor, teacher_logp: torch.Tensor, coached: torch.Tensor, *, beta: float = 5.0
) -> torch.Tensor:
    """The released code's per-token value ``g·(sg(ℓ_T) − ℓ)``, token-mean: same gradient, other value."""
    mask = coached.to(logp.dtype)
    gate = csd_gate(teacher_logp - logp, beta)
    terms = torch.where(mask > 0, gate * (teacher_logp.detach() - logp), torch.zeros_like(logp))
    return terms.sum() / mask.sum().clamp(min=1)
