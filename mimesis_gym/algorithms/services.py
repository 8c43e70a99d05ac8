"""What the trainer's loop and its learners share: scoring under the policy, seeds, ranks.

See docs/algorithms.md, "Learners and the trainer's modules".

A learner receives a :class:`LoopServices` and never reaches into the trainer. Through it, it

* scores token sequences under the current weights (:meth:`LoopServices.score`: no grad,
  micro-batched by the token budget, every rank running the same number of forwards);
* derives seeds from the run seed (:func:`derive_seed`), so a run is reproducible and resumable;
* combines per-rank values: sums (:func:`sum_over_ranks`), maxima (:func:`max_over_ranks`) and
  concatenated lists (:func:`gather_lists`). With one process these are identities.

:func:`fill_old_logprobs` and :func:`sampler_logprobs` give every training row its ``ℓ_old``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from mimesis_gym.algorithms.batching import Collated, MicroPlan, Row, collate, plan_micro
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.records import Episode
from mimesis_gym.algorithms.render import ChatRenderer

__all__ = [
    "LoopServices",
    "derive_seed",
    "fill_old_logprobs",
    "gather_lists",
    "max_over_ranks",
    "sampler_logprobs",
    "sum_over_ranks",
]


def derive_seed(run_seed: int, *parts: int) -> int:
    """A seed in ``[0, 2³¹ − 1)`` derived from the run seed and ``parts`` (e.g. step, phase, rank)."""
    return int(np.random.default_rng([run_seed, *parts]).integers(0, 2**31 - 1))


def max_over_ranks(accelerator: Any, count: int) -> int:
    """The largest ``count`` of any rank (a collective: every rank must call it)."""
    if accelerator.num_processes == 1:
        return count
    value = torch.tensor([count], device=accelerator.device)
    return int(accelerator.gather(value).max().item())


def sum_over_ranks(accelerator: Any, values: Mapping[str, float]) -> dict[str, float]:
    """Each named value summed over the ranks, in float64 (a collective: every rank passes the same names)."""
    names = sorted(values)
    if accelerator.num_processes == 1:
        return {name: float(values[name]) for name in names}
    tensor = torch.tensor([float(values[name]) for name in names], dtype=torch.float64, device=accelerator.device)
    return dict(zip(names, accelerator.reduce(tensor, reduction="sum").tolist(), strict=True))


def gather_lists(accelerator: Any, items: list[Any]) -> list[Any]:
    """Every rank's ``items`` (picklable), concatenated in rank order (a collective)."""
    if accelerator.num_processes == 1:
        return list(items)
    from accelerate.utils import gather_object

    return gather_object(items)


@dataclass
class LoopServices:
    """The trainer's handles a learner may use; built once by the trainer.

    ``scorer`` is the prepared policy (its forward returns per-position log-probs, see
    :class:`~mimesis_gym.algorithms.logprobs.PolicyScorer`); ``counters`` counts forwards by phase
    (``<phase>_forwards``); ``user_model`` is the envs' user chat model (``"scripted"`` when none);
    ``packing`` and ``prefix_sharing`` are ``update.packing`` and ``update.prefix_sharing`` resolved.
    """

    config: TrainerConfig
    accelerator: Any
    scorer: Any
    renderer: ChatRenderer
    pad_id: int
    packing: bool
    user_model: Any = "scripted"
    counters: Counter[str] = field(default_factory=Counter)
    prefix_sharing: bool = False

    @property
    def rank(self) -> int:
        return int(self.accelerator.process_index)

    @property
    def world(self) -> int:
        return int(self.accelerator.num_processes)

    def seed(self, *parts: int) -> int:
        """:func:`derive_seed` of the run seed."""
        return derive_seed(self.config.run.seed, *parts)

    def max_over_ranks(self, count: int) -> int:
        return max_over_ranks(self.accelerator, count)

    def sum_over_ranks(self, values: Mapping[str, float]) -> dict[str, float]:
        return sum_over_ranks(self.accelerator, values)

    def gather(self, items: list[Any]) -> list[Any]:
        return gather_lists(self.accelerator, items)

    def plan(self, sequences: Sequence[Sequence[int]]) -> list[MicroPlan]:
        """This rank's micro-batches of ``sequences`` under ``update.micro_batch_tokens`` (:func:`plan_micro`)."""
        update = self.config.update
        return plan_micro(
            sequences,
            update.micro_batch_tokens,
            packing=self.packing,
            share_prefix=self.prefix_sharing,
            min_prefix=update.prefix_sharing_min_tokens,
        )

    def collate(self, sequences: Sequence[Sequence[int]], plan: MicroPlan | None = None) -> Collated:
        """The tensors of one micro-batch on this rank's device: padded when its rows share a prefix."""
        packing = self.packing and not (plan and plan.shared_prefix)
        return collate(sequences, packing=packing, pad_id=self.pad_id, device=self.accelerator.device)

    def score(
        self, sequences: Sequence[Sequence[int]], masks: Sequence[Sequence[int]], phase: str, scorer: Any = None
    ) -> list[list[float]]:
        """No-grad log-probs of ``sequences`` at their mask-1 positions (0 elsewhere), one list per sequence.

        Micro-batched by ``update.micro_batch_tokens`` at the rollout temperature; every rank runs the
        same number of forwards (dummy rows where it has fewer), so call it on every rank, with an
        empty list where a rank has nothing — or skip it on every rank when ``max_over_ranks`` of the
        counts is 0. ``phase`` names the forwards in ``counters``; ``scorer`` defaults to the policy.
        """
        scorer = scorer or self.scorer
        plan = self.plan(sequences)
        results: list[list[float]] = [[] for _ in sequences]
        temperature = self.config.rollout.temperature
        with torch.no_grad():
            for k in range(self.max_over_ranks(len(plan))):
                micro = plan[k] if k < len(plan) else MicroPlan([])
                group = micro.rows
                batch_rows = [sequences[i] for i in group] or [[self.pad_id, self.pad_id]]
                batch_masks = [masks[i] for i in group] or [[0, 1]]
                batch = self.collate(batch_rows, micro)
                score_mask = batch.place(batch_masks, dtype=torch.bool)
                logprobs, _ = scorer(
                    batch.input_ids,
                    score_mask,
                    batch.position_ids,
                    batch.attention_mask,
                    temperature,
                    False,
                    micro.shared_prefix,
                )
                self.counters[f"{phase}_forwards"] += 1
                for i, values in zip(group, batch.take(logprobs), strict=False):
                    results[i] = values
        return results


def sampler_logprobs(episode: Episode, segment: int) -> list[float]:
    """The sampler's log-probs of a segment's action tokens, per position (0 elsewhere)."""
    values = [0.0] * len(episode.segments[segment].input_ids)
    for turn in episode.turns:
        if turn.segment == segment:
            start, end = turn.action_span
            for position, value in zip(range(start, end), turn.sampler_logprobs, strict=False):
                values[position] = value
    return values


def fill_old_logprobs(services: LoopServices, episodes: Sequence[Episode], rows: Sequence[Row]) -> None:
    """Set ``episode.old_logprobs`` of ``rows``: one no-grad pass, or the sampler's (``loss.old_logprob_source``)."""
    if services.config.loss.old_logprob_source == "sampler":
        values = [sampler_logprobs(episodes[r.episode], r.segment) for r in rows]
    else:
        services.counters["old_logprob_passes"] += 1
        sequences = [episodes[r.episode].segments[r.segment].input_ids for r in rows]
        masks = [episodes[r.episode].segments[r.segment].loss_mask for r in rows]
        values = services.score(sequences, masks, "old_logprob")
    for row, logprobs in zip(rows, values, strict=True):
        episode = episodes[row.episode]
        if episode.old_logprobs is None:
            episode.old_logprobs = [[] for _ in episode.segments]
        episode.old_logprobs[row.segment] = logprobs
