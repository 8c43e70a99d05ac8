"""The advantage phase of a training step: the configured estimator on a batch, and its metrics.

See docs/algorithms.md, "Advantages: one number per turn".

:func:`estimate` runs the estimator of ``config.advantage`` on the gathered episodes (identical on
every rank); :func:`assign` stores one value per turn in ``episode.turn_advantages``;
:func:`advantage_metrics` summarises any advantages (``adv/mean``, ``adv/std``,
``adv/zero_token_frac``, token-weighted) and :func:`estimator_metrics` the estimator's view of the
batch (``group/zero_std_frac``: groups whose scores tie; ``adv/credit_sum_min`` for the estimators
with turn credit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from mimesis_gym.algorithms import advantages as estimators
from mimesis_gym.algorithms.config import AdvantageConfig
from mimesis_gym.algorithms.records import Episode

__all__ = ["advantage_metrics", "assign", "estimate", "estimator_metrics", "group_score"]


def estimate(
    episodes: Sequence[Episode], config: AdvantageConfig, *, epoch: int, diagnostics: dict[str, Any] | None = None
) -> list[list[float]]:
    """Per-turn advantages of every episode by ``config.estimator`` (``diagnostics`` filled by InfoPO)."""
    inputs = [episode.estimator_input() for episode in episodes]
    if not inputs:
        return []
    options = config.estimator_options(epoch=epoch)
    return estimators.compute_advantages(inputs, config.estimator, diagnostics=diagnostics, **options)


def assign(episodes: Sequence[Episode], values: Sequence[Sequence[float]]) -> None:
    """``episode.turn_advantages`` from one list of per-turn values per episode."""
    for episode, turn_values in zip(episodes, values, strict=True):
        episode.turn_advantages = [float(v) for v in turn_values]


def advantage_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """Token-weighted mean and std of the assigned advantages, and the share of action tokens at exactly 0."""
    pairs = [(a, n) for e in episodes for a, n in zip(e.turn_advantages or [], e.turn_token_counts, strict=True)]
    tokens = sum(n for _, n in pairs)
    if not tokens:
        return {"adv/mean": 0.0, "adv/std": 0.0, "adv/zero_token_frac": 1.0}
    mean = sum(a * n for a, n in pairs) / tokens
    return {
        "adv/mean": mean,
        "adv/std": math.sqrt(sum(n * (a - mean) ** 2 for a, n in pairs) / tokens),
        "adv/zero_token_frac": sum(n for a, n in pairs if a == 0) / tokens,
    }


def group_score(episode: Episode, config: AdvantageConfig) -> float:
    """The score the estimator normalises within a group: the trajectory score, or the outcome score."""
    options = config.estimator_options()
    if "trajectory_score" in options:
        return estimators.score_trajectory(episode.turn_rewards, options["trajectory_score"], config.gamma)
    return estimators.score_outcome(episode.estimator_input(), config.score)


def estimator_metrics(episodes: Sequence[Episode], config: AdvantageConfig) -> dict[str, float]:
    """``group/zero_std_frac`` and, for estimators with turn credit, ``adv/credit_sum_min`` (``min Σ_t c_t n_t``)."""
    scores: dict[str, list[float]] = {}
    for episode in episodes:
        scores.setdefault(episode.group_id, []).append(group_score(episode, config))
    ties = sum(1 for values in scores.values() if len(values) < 2 or max(values) == min(values))
    metrics = {"group/zero_std_frac": ties / len(scores) if scores else 1.0}
    options = config.estimator_options()
    if "turn_credit" in options:
        sums = [
            sum(
                c * n
                for c, n in zip(
                    estimators.turn_credits(e.turn_rewards, options["turn_credit"], config.gamma),
                    e.turn_token_counts,
                    strict=True,
                )
            )
            for e in episodes
        ]
        metrics["adv/credit_sum_min"] = float(min(sums)) if sums else 0.0
    return metrics
