"""InfoPO counterfactual rows and information gains (docs/algorithms.md, "InfoPO").

For each turn ``t < T`` whose observation text is non-empty and whose ``feedback_span`` has length
``L ≥ 1``, the sequence holding ``a_{t+1}`` is copied with the feedback span replaced by exactly
``L`` placeholder ids (the tokenised placeholder, padded by repeating its last id or truncated), so
every position stays aligned, and cut after ``a_{t+1}``. ``I_t`` is the mean over ``a_{t+1}`` of
``ℓ_old(real) − ℓ_old(counterfactual)``; the estimator (:func:`~mimesis_gym.algorithms.advantages.infopo`)
credits it to ``a_t``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mimesis_gym.algorithms.records import Episode
from mimesis_gym.algorithms.render import strip_reward_line

__all__ = ["CounterfactualRow", "counterfactual_rows", "fit_placeholder", "information_gains"]


def fit_placeholder(placeholder_ids: Sequence[int], length: int) -> list[int]:
    """Exactly ``length`` ids: the placeholder truncated, or padded by repeating its last id."""
    ids = list(placeholder_ids)
    if not ids:
        raise ValueError("the InfoPO placeholder tokenises to no ids")
    return ids[:length] if len(ids) >= length else ids + [ids[-1]] * (length - len(ids))


@dataclass(frozen=True)
class CounterfactualRow:
    """The counterfactual input for the feedback after turn ``turn`` (scored on ``a_{turn+1}``)."""

    rollout_id: str
    turn: int
    segment: int
    input_ids: list[int]
    score_span: tuple[int, int]


def counterfactual_rows(episode: Episode, placeholder_ids: Sequence[int]) -> list[CounterfactualRow]:
    """One row per turn ``t < T`` with locatable, non-empty feedback (accumulate mode: one segment)."""
    rows = []
    for turn, following in zip(episode.turns, episode.turns[1:], strict=False):
        span = turn.feedback_span
        if span is None or span[1] <= span[0] or following.segment != turn.segment:
            continue
        if not strip_reward_line(turn.observation or "").strip():
            continue
        ids = list(episode.segments[turn.segment].input_ids[: following.action_span[1]])
        ids[span[0] : span[1]] = fit_placeholder(placeholder_ids, span[1] - span[0])
        rows.append(CounterfactualRow(episode.rollout_id, turn.index, turn.segment, ids, following.action_span))
    return rows


def information_gains(
    episode: Episode, rows: Sequence[CounterfactualRow], counterfactual_logprobs: Sequence[Sequence[float]]
) -> list[float]:
    """``I_t`` for every turn ``t < T`` of ``episode`` (0 for turns without a row)."""
    assert episode.old_logprobs is not None, "old log-probs come first: they are the 'real' term"
    gains = [0.0] * max(0, len(episode.turns) - 1)
    for row, logprobs in zip(rows, counterfactual_logprobs, strict=True):
        start, end = row.score_span
        real = episode.old_logprobs[row.segment][start:end]
        counterfactual = list(logprobs)[start:end]
        if end > start:
            gains[row.turn - 1] = sum(r - c for r, c in zip(real, counterfactual, strict=True)) / (end - start)
    return gains
