"""The engine contract shared by the collectors (docs/algorithms.md, "Generation engines")."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

__all__ = ["EngineContractError", "GenerationEngine", "Sample", "Sampling", "classify_finish"]


class EngineContractError(RuntimeError):
    """The engine returned something the collector cannot record exactly (never silently patched)."""


@dataclass(frozen=True)
class Sampling:
    """Sampling parameters of one generation call; ``temperature == 0`` means greedy."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = None

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0


@dataclass(frozen=True)
class Sample:
    """One generated continuation.

    ``ids`` are the sampled ids, the stop id included when the turn stopped; ``logprobs`` the
    sampler's log-probs of those ids (log-softmax of the raw logits divided by the temperature,
    before top-p/top-k truncation; temperature 1 for greedy); ``finish`` is ``stop`` (the template's
    end-of-turn id), ``eos`` (another stop id) or ``length``.
    """

    ids: list[int]
    logprobs: list[float]
    finish: Literal["stop", "eos", "length"]


class GenerationEngine(Protocol):
    """Token-id prompts in, :class:`Sample` per prompt out (one batched call per turn)."""

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        *,
        max_new_tokens: Sequence[int],
        sampling: Sampling,
        seed: int | None = None,
    ) -> list[Sample]: ...


def classify_finish(ids: list[int], end_of_turn_id: int, stop_ids: frozenset[int]) -> Literal["stop", "eos", "length"]:
    """``stop`` when the last id is the end-of-turn id, ``eos`` for another stop id, else ``length``."""
    if ids and ids[-1] == end_of_turn_id:
        return "stop"
    if ids and ids[-1] in stop_ids:
        return "eos"
    return "length"
