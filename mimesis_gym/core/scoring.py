"""Episode scores of the paper's evaluation protocol (docs/evaluation.md, "Scoring").

An env names its rule in ``ConversationEnv.scoring``. ``"sum"`` (every env but TravelGym) scores an
episode as the sum of its step rewards. ``"per_aspect_best"`` (TravelGym) keys each answer step by
the first character of its stripped content (the option's aspect letter), keeps the best reward
per key and divides the sum of the bests by ``score_context["n_aspects"]``.

Envs use the same accumulators step by step for ``info["episode_score"]`` that the evaluation
harness uses to re-score recorded episodes, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

__all__ = ["SCORING_RULES", "EpisodeScorer", "PerAspectBestScore", "SumOfRewards", "episode_score", "make_scorer"]

SCORING_RULES = ("sum", "per_aspect_best")


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


def make_scorer(rule: str, score_context: Mapping[str, Any] | None = None) -> EpisodeScorer:
    """A fresh scorer of ``rule`` (one of :data:`SCORING_RULES`) for one episode.

    Raises ``ValueError`` for an unknown rule or a ``per_aspect_best`` context without ``n_aspects``.
    """
    if rule == "sum":
        return SumOfRewards()
    if rule == "per_aspect_best":
        context = score_context or {}
        if "n_aspects" not in context:
            raise ValueError("the per_aspect_best rule (TravelGym) needs score_context['n_aspects']")
        return PerAspectBestScore(int(context["n_aspects"]))
    raise ValueError(f"unknown scoring rule {rule!r}; known: {', '.join(SCORING_RULES)}")


def episode_score(
    rule: str,
    steps: Iterable[Mapping[str, Any]],
    score_context: Mapping[str, Any] | None = None,
) -> float:
    """Re-score a recorded episode from its steps (``action_kind``, ``content``, ``reward``) under
    ``rule`` (the env class's ``scoring``).

    An episode without steps scores 0.0.
    """
    scorer = make_scorer(rule, score_context)
    for step in steps:
        scorer.add(step.get("action_kind"), step.get("content") or "", float(step["reward"]))
    return scorer.value
