"""Episode scores of the paper's evaluation protocol (evaluation.md §2.1).

Every env except TravelGym scores an episode as the sum of its step rewards. TravelGym keys each
answer step by the first character of its stripped content (the option's aspect letter), keeps
the best reward per key and divides the sum of the bests by the task's number of aspects.

Envs use the same accumulators step by step for ``info["episode_score"]`` that the evaluation
harness uses to re-score recorded episodes, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

__all__ = ["EpisodeScorer", "PerAspectBestScore", "SumOfRewards", "episode_score", "make_scorer"]


class EpisodeScorer(Protocol):
    """Accumulates one episode's steps; ``add`` returns the score so far."""

    def add(self, action_kind: str | None, content: str, reward: float) -> float: ...

    @property
    def value(self) -> float: ...


class SumOfRewards:
    """The sum of the step rewards, nothing clipped (all envs but TravelGym)."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0.0

    def add(self, action_kind: str | None, content: str, reward: float) -> float:
        self.value += reward
        return self.value


class PerAspectBestScore:
    """TravelGym: best reward per answered aspect, summed, divided by ``n_aspects``.

    Only ``answer`` steps with non-empty stripped content count; the key is the first character
    of the stripped content, taken as written.
    """

    __slots__ = ("best", "n_aspects", "value")

    def __init__(self, n_aspects: int) -> None:
        if n_aspects <= 0:
            raise ValueError(f"n_aspects must be positive, got {n_aspects}")
        self.n_aspects = n_aspects
        self.best: dict[str, float] = {}
        self.value = 0.0

    def add(self, action_kind: str | None, content: str, reward: float) -> float:
        key = content.strip()[:1]
        if action_kind == "answer" and key and (key not in self.best or reward > self.best[key]):
            self.best[key] = reward
            self.value = sum(self.best.values()) / self.n_aspects
        return self.value


def make_scorer(env: str, score_context: Mapping[str, Any] | None = None) -> EpisodeScorer:
    """The scorer of env ``env`` (short name, e.g. ``"travel"``) for one episode."""
    if env == "travel":
        context = score_context or {}
        if "n_aspects" not in context:
            raise ValueError("scoring a TravelGym episode needs score_context['n_aspects']")
        return PerAspectBestScore(int(context["n_aspects"]))
    return SumOfRewards()


def episode_score(
    env: str,
    steps: Iterable[Mapping[str, Any]],
    score_context: Mapping[str, Any] | None = None,
) -> float:
    """Re-score a recorded episode from its steps (``action_kind``, ``content``, ``reward``).

    An episode without steps scores 0.0.
    """
    scorer = make_scorer(env, score_context)
    for step in steps:
        scorer.add(step.get("action_kind"), step.get("content") or "", float(step["reward"]))
    return scorer.value
