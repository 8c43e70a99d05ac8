"""The learner seam: what one algorithm adds to the trainer's loop.

See docs/algorithms.md, "Learners and the trainer's modules".

The loop of :meth:`~mimesis_gym.algorithms.trainer.Trainer.step` is the same for every algorithm —
collect → old log-probs → learners' passes → advantages → PPO-clip update → log — and calls each
active :class:`Learner` at fixed points, in this order:

0. :meth:`Learner.episodes`: an offline learner (SFT) supplies the step's records instead of rollouts;
1. :meth:`Learner.prepare` once per rollout batch, after ``ℓ_old`` (InfoPO's counterfactual
   forwards, CSD's coach notes and teacher rows);
2. :meth:`Learner.advantages`: a learner may replace the configured estimator's advantages;
3. per mini-batch, :meth:`Learner.begin_minibatch` with every rank's rows: does the learner's loss
   term have a gradient there (a mini-batch where nothing has one skips its forwards);
4. per micro-batch, :meth:`Learner.before_forward` (no-grad passes under the current weights, CSD's
   teacher) and, after the student forward, :meth:`Learner.extra_loss` (the term added to the loss);
5. :meth:`Learner.metrics` after the updates.

Every hook has a do-nothing default; a learner overrides the ones it needs. It reaches the policy,
seeds and ranks only through :class:`~mimesis_gym.algorithms.services.LoopServices`. State that must
survive a resume goes through :meth:`Learner.state_dict` / :meth:`Learner.load_state_dict`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch

from mimesis_gym.algorithms.batching import Collated, Row
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.records import Episode
from mimesis_gym.algorithms.services import LoopServices

__all__ = ["Learner", "MicroBatch", "RolloutBatch"]


@dataclass
class RolloutBatch:
    """One step's episodes, identical and in the same order on every rank, cut into rows and mini-batches.

    ``local`` are the episodes this rank collected (a rank does per-episode work, such as coaching,
    on these only, then gathers the results); ``shares[m]`` are this rank's row indices of mini-batch
    ``m``; ``diagnostics`` is what the configured estimator reported (InfoPO's λ, β and gates).
    """

    step: int
    episodes: list[Episode]
    local: list[Episode]
    rows: list[Row]
    minibatches: list[list[int]]
    shares: list[list[int]]
    diagnostics: dict[str, Any] = field(default_factory=dict)
    offline: bool = False
    """The episodes came from a learner (:meth:`Learner.episodes`), not from rollouts."""

    @property
    def my_rows(self) -> list[Row]:
        """This rank's rows of every mini-batch."""
        return [self.rows[i] for share in self.shares for i in share]


@dataclass
class MicroBatch:
    """One micro-batch of this rank: its rows, their collated tensors and the mask of the action tokens.

    A ``dummy`` micro-batch (a rank with fewer micro-batches than another keeps the collectives in
    step) repeats a row with weight 0; ``micro_count`` is the number of real micro-batches of this rank
    in the mini-batch and ``minibatch`` every rank's rows of it.
    """

    batch: RolloutBatch
    rows: list[Row]
    collated: Collated
    score_mask: torch.Tensor
    dummy: bool
    micro_count: int
    minibatch: list[Row]


class Learner:
    """An algorithm's passes; the base class adds nothing (plain PPO-clip on the estimator's advantages).

    Subclass it, set :attr:`name` (the ``algorithm`` name it is selected by) and register the class
    with :func:`~mimesis_gym.algorithms.learners.registry.register_learner`.
    """

    name: ClassVar[str] = ""
    compares_forwards: ClassVar[bool] = False
    """Compares two forwards of the same weights: the trainer refuses a model with dropout."""
    needs_old_logprobs: ClassVar[bool] = False
    """Reads ``episode.old_logprobs`` in :meth:`prepare`: the one-step shortcut that skips them is off."""

    @classmethod
    def enabled(cls, config: TrainerConfig) -> bool:
        """Whether the config alone turns this learner on (a learner registered at run time: only by name)."""
        return False

    @classmethod
    def validate(cls, config: TrainerConfig) -> None:
        """Raise ``ValueError`` naming the setting and the fix when ``config`` cannot run (called for every learner)."""

    @classmethod
    def check_selected(cls, config: TrainerConfig) -> None:
        """Raise ``ValueError`` naming the setting and the fix when this learner is selected but cannot run.

        Called for the learners that will run only (after :meth:`validate`), before anything is loaded.
        """

    @classmethod
    def env_kwargs(cls, config: TrainerConfig) -> dict[str, Any]:
        """Extra keyword arguments of the training envs (a registered env id's own kwargs take precedence)."""
        return {}

    def __init__(self, services: LoopServices) -> None:
        self.services = services
        self.config = services.config

    def episodes(self, step: int, epoch: int, cursor: int) -> tuple[list[Episode], tuple[int, int]] | None:
        """Records to train on instead of this step's rollouts (an offline learner such as SFT), or ``None``.

        Called on every rank with the trainer's data position; return the same episodes on every rank
        (rollout ids ``'{step}:{group}:{member}'``) and the position after them, which a checkpoint keeps.
        """
        return None

    def prepare(self, batch: RolloutBatch) -> dict[str, float]:
        """Per-batch passes before the advantages; returns metrics to log."""
        return {}

    def advantages(self, batch: RolloutBatch) -> list[list[float]] | None:
        """Per-turn advantages of every episode of ``batch`` replacing the configured estimator's, or ``None``."""
        return None

    def begin_minibatch(self, rows: list[Row]) -> bool:
        """A mini-batch starts (``rows``: every rank's); whether :meth:`extra_loss` has a gradient on it."""
        return False

    def before_forward(self, micro: MicroBatch) -> None:
        """No-grad passes for a micro-batch, before the student forward; called on every rank, dummies included."""

    def extra_loss(self, micro: MicroBatch, logprobs: torch.Tensor) -> torch.Tensor | None:
        """The term added to the micro-batch's loss (coefficient included), from the student's ``logprobs``.

        ``logprobs`` is ``(B, T)`` like ``micro.collated.input_ids``, with a graph to the policy; the
        term is backpropagated as part of the loss, so scale it by the global mini-batch count as the
        PPO term is (see :func:`~mimesis_gym.algorithms.losses.aggregation_weights`). Not called for dummies.
        """
        return None

    def metrics(self, batch: RolloutBatch) -> dict[str, float]:
        """Metrics after the batch's updates (reduce per-rank sums with ``services.sum_over_ranks``)."""
        return {}

    def state_dict(self) -> dict[str, Any]:
        """JSON-ready state saved in ``trainer_state.json`` (top-level keys: choose names that will not clash)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore from the whole ``trainer_state.json`` mapping (keys may be missing in older checkpoints)."""
