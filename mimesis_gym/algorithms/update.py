"""The update phase of a training step: PPO-clip over mini-batches.

See docs/algorithms.md, "The PPO-clip core", "One training step".

Per PPO epoch and mini-batch: the learners say whether their terms have a gradient there; a
mini-batch where nothing has one (every advantage 0, no KL or entropy term) skips its forwards and
steps AdamW with zero gradients, which is what the full computation would do. Otherwise, per
micro-batch of this rank: the learners' no-grad passes, the student forward, the PPO-clip loss
(aggregated by :func:`~mimesis_gym.algorithms.losses.aggregation_weights` over the whole mini-batch
on every rank), the entropy bonus, the KL penalty, the learners' extra terms, and the backward; then
the gradient clip and the optimizer step (skipped when the gradient norm is not finite).
"""

from __future__ import annotations

import contextlib
import math
import random
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from mimesis_gym.algorithms.batching import MicroPlan, Row
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners.base import Learner, MicroBatch, RolloutBatch
from mimesis_gym.algorithms.losses import aggregation_weights, kl_penalty, token_losses
from mimesis_gym.algorithms.records import Episode
from mimesis_gym.algorithms.services import LoopServices, sampler_logprobs

__all__ = ["PolicyUpdate", "lr_schedule", "token_advantages"]

PER_RANK_SUMS = (
    "tokens", "clip", "dual_clip", "ppo_kl", "loss_pg", "loss_total", "logprob_gap", "real_tokens", "padded_tokens",
    "entropy", "kl", "shared_tokens",
)  # fmt: skip
"""Sums each rank accumulates over its micro-batches (reduced over ranks for the metrics)."""


def token_advantages(episode: Episode, segment: int) -> list[float]:
    """Per position of a segment: the advantage of the turn that owns the action token there (0 elsewhere)."""
    seg = episode.segments[segment]
    values = episode.turn_advantages or []
    return [
        values[owner - 1] if m and owner else 0.0 for m, owner in zip(seg.loss_mask, seg.turn_of_position, strict=True)
    ]


class PolicyUpdate:
    """Runs the updates of one rollout batch with the trainer's optimizer, scheduler and reference model."""

    def __init__(
        self, services: LoopServices, optimizer: Any, scheduler: Any, reference: Any, learners: Sequence[Learner]
    ) -> None:
        self.services = services
        self.config = services.config
        self.optimizer = optimizer
        self.scheduler = scheduler
        self.reference = reference
        self.learners = list(learners)

    def run(self, batch: RolloutBatch, *, shortcut: bool) -> tuple[dict[str, float], int]:
        """Every epoch and mini-batch of ``batch``; returns the update metrics and the number of skipped steps.

        ``shortcut``: one optimizer step per batch without ``ℓ_old`` — the detached current log-probs stand in.
        """
        cfg = self.config
        sums: Counter[str] = Counter()
        grad_norms: list[float] = []
        skipped = 0
        for epoch in range(cfg.update.ppo_epochs):
            order = list(range(len(batch.minibatches)))
            if cfg.update.shuffle and epoch > 0:
                random.Random(self.services.seed(batch.step, 3, epoch)).shuffle(order)
            for m in order:
                grad_norms.append(self.minibatch(batch, m, shortcut, sums))
                skipped += not math.isfinite(grad_norms[-1])
        return self.metrics(sums, grad_norms, len(batch.minibatches) * cfg.update.ppo_epochs), skipped

    def has_gradient(self, batch: RolloutBatch, rows: Sequence[Row], learner_terms: bool) -> bool:
        """Whether the loss of these rows has a gradient: a learner's term, KL, entropy or a non-zero advantage."""
        loss = self.config.loss
        if learner_terms or loss.kl_coef or loss.entropy_coef:
            return True
        for row in rows:
            episode = batch.episodes[row.episode]
            values = episode.turn_advantages or []
            if any(values[t.index - 1] != 0 for t in episode.turns if t.segment == row.segment and t.action_tokens):
                return True
        return False

    def minibatch(self, batch: RolloutBatch, m: int, shortcut: bool, sums: Counter[str]) -> float:
        """One optimizer step on mini-batch ``m``; returns the gradient norm (0 when the forwards were skipped)."""
        cfg, services = self.config, self.services
        all_rows = [batch.rows[i] for i in batch.minibatches[m]]
        learner_terms = [learner.begin_minibatch(all_rows) for learner in self.learners]
        if not self.has_gradient(batch, all_rows, any(learner_terms)):
            # the loss has no gradient: skip the forwards but still step AdamW with zero gradients,
            # so the update equals the full computation
            sums["skipped_forward_minibatches"] += 1
            for parameter in services.scorer.parameters():
                if parameter.requires_grad:
                    parameter.grad = torch.zeros_like(parameter)
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            return 0.0
        tokens = sum(r.action_tokens for r in all_rows)
        sequences = sum(1 for r in all_rows if r.action_tokens)
        mine = [batch.rows[i] for i in batch.shares[m]]
        plan = services.plan([batch.episodes[r.episode].segments[r.segment].input_ids for r in mine])
        count = services.max_over_ranks(len(plan))
        for k in range(count):
            dummy = k >= len(plan)
            micro = plan[k] if not dummy else MicroPlan([0])
            rows = [mine[j] for j in micro.rows] if not dummy else [(mine or all_rows)[0]]
            last = k == count - 1
            no_sync = not last and services.world > 1
            with services.accelerator.no_sync(services.scorer) if no_sync else contextlib.nullcontext():
                self.micro_step(batch, rows, all_rows, dummy, len(plan), tokens, sequences, shortcut, sums, micro)
        grad_norm = services.accelerator.clip_grad_norm_(services.scorer.parameters(), cfg.optim.grad_clip)
        grad_norm = float(grad_norm) if grad_norm is not None else float("nan")
        if math.isfinite(grad_norm):
            self.optimizer.step()
            self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return grad_norm

    def row_weights(self, rows: Sequence[Row], micro_count: int, tokens: int, sequences: int) -> list[float]:
        """Each row's aggregation weight: over the whole mini-batch, or per micro-batch (``token_mean_scope``)."""
        loss_cfg, max_response = self.config.loss, self.config.rollout.max_response_tokens
        counts = [r.action_tokens for r in rows]
        if loss_cfg.token_mean_scope == "microbatch":
            local_sequences = sum(1 for n in counts if n)
            weights = aggregation_weights(counts, loss_cfg.loss_agg, sum(counts), local_sequences, max_response)
            return [w / max(1, micro_count) for w in weights]
        return aggregation_weights(counts, loss_cfg.loss_agg, tokens, sequences, max_response)

    def micro_step(
        self,
        batch: RolloutBatch,
        rows: list[Row],
        minibatch: list[Row],
        dummy: bool,
        micro_count: int,
        tokens: int,
        sequences: int,
        shortcut: bool,
        sums: Counter[str],
        plan: MicroPlan,
    ) -> None:
        """Forward, loss and backward of one micro-batch (a dummy one backpropagates a zero-weight loss)."""
        cfg, services = self.config, self.services
        loss_cfg, episodes = cfg.loss, batch.episodes
        segments = [episodes[r.episode].segments[r.segment] for r in rows]
        shared = 0 if dummy else plan.shared_prefix
        collated = services.collate([s.input_ids for s in segments], plan)
        mask = collated.place([s.loss_mask for s in segments])
        row_weights = [0.0] * len(rows) if dummy else self.row_weights(rows, micro_count, tokens, sequences)
        weights = collated.place([[w * m for m in s.loss_mask] for w, s in zip(row_weights, segments, strict=True)])
        advantage = collated.place([token_advantages(episodes[r.episode], r.segment) for r in rows])
        score_mask = mask > 0
        micro = MicroBatch(batch, rows, collated, score_mask, dummy, micro_count, minibatch)
        for learner in self.learners:
            learner.before_forward(micro)

        logprobs, entropy = services.scorer(
            collated.input_ids,
            score_mask,
            collated.position_ids,
            collated.attention_mask,
            cfg.rollout.temperature,
            loss_cfg.entropy_coef > 0,
            shared,
        )
        services.counters["student_forwards"] += 1
        if shortcut:
            old = logprobs.detach()
        else:
            old = collated.place([self.old_logprobs(episodes[r.episode], r) for r in rows])
        losses = token_losses(
            logprobs,
            old,
            advantage,
            clip_low=loss_cfg.clip_low,
            clip_high=loss_cfg.clip_high,
            dual_clip=loss_cfg.dual_clip,
        )
        sampler = collated.place([sampler_logprobs(episodes[r.episode], r.segment) for r in rows])
        if loss_cfg.rollout_is == "token":
            losses = losses * torch.clamp(torch.exp(old - sampler), max=2.0).detach()
        losses = torch.where(score_mask, losses, torch.zeros_like(losses))
        pg = (losses * weights).sum()
        total = pg
        if entropy is not None:
            total = total - loss_cfg.entropy_coef * (torch.where(score_mask, entropy, 0.0) * weights).sum()
        kl_value = None
        if self.reference is not None:
            with torch.no_grad():
                reference, _ = self.reference(
                    collated.input_ids,
                    score_mask,
                    collated.position_ids,
                    collated.attention_mask,
                    cfg.rollout.temperature,
                    False,
                    shared,
                )
            kl = torch.where(score_mask, kl_penalty(logprobs, reference, loss_cfg.kl_estimator), 0.0)
            kl_value = (kl * weights).sum()
            total = total + loss_cfg.kl_coef * kl_value
        if not dummy:
            for learner in self.learners:
                extra = learner.extra_loss(micro, logprobs)
                if extra is not None:
                    total = total + extra
        services.accelerator.backward(total * services.world)
        if dummy:
            return
        with torch.no_grad():
            ratio = torch.exp(torch.clamp(logprobs - old, -20, 20))
            unclipped = -advantage * ratio
            clipped = -advantage * torch.clamp(ratio, 1 - loss_cfg.clip_low, 1 + loss_cfg.clip_high)
            bound = torch.maximum(unclipped, clipped) > loss_cfg.dual_clip * advantage.abs()
            sums["tokens"] += int(score_mask.sum().item())
            sums["clip"] += int(((clipped > unclipped) & score_mask).sum().item())
            sums["dual_clip"] += int(((advantage < 0) & bound & score_mask).sum().item())
            sums["ppo_kl"] += float(torch.where(score_mask, old - logprobs, 0.0).sum().item())
            sums["loss_pg"] += float(pg.item())
            sums["loss_total"] += float(total.item())
            sums["logprob_gap"] += float(torch.where(score_mask, (sampler - old).abs(), 0.0).sum().item())
            sums["real_tokens"] += collated.real_tokens
            sums["padded_tokens"] += collated.padded_tokens
            sums["shared_tokens"] += shared * (len(rows) - 1)
            if entropy is not None:
                sums["entropy"] += float(torch.where(score_mask, entropy, 0.0).sum().item())
            if kl_value is not None:
                sums["kl"] += float(kl_value.item())

    def old_logprobs(self, episode: Episode, row: Row) -> list[float]:
        if episode.old_logprobs is None or not episode.old_logprobs[row.segment]:
            raise RuntimeError(
                f"no old log-probs for {episode.rollout_id} segment {row.segment} on rank {self.services.rank}"
            )
        return episode.old_logprobs[row.segment]

    def metrics(self, sums: Counter[str], grad_norms: list[float], optimizer_steps: int) -> dict[str, float]:
        """``loss/*``, clip fractions, ``ppo_kl``, ``grad_norm``, ``lr``, padding, the sampler gap (every rank)."""
        totals = self.services.sum_over_ranks({name: sums[name] for name in PER_RANK_SUMS})
        tokens = max(1.0, totals["tokens"])
        steps = max(1, optimizer_steps)
        metrics = {
            "loss/pg": totals["loss_pg"] / steps,
            "loss/total": totals["loss_total"] / steps,
            "pg_clipfrac": totals["clip"] / tokens,
            "pg_clipfrac_lower": totals["dual_clip"] / tokens,
            "ppo_kl": totals["ppo_kl"] / tokens,
            "grad_norm": float(np.mean(grad_norms)) if grad_norms else 0.0,
            "lr": float(self.scheduler.get_last_lr()[0]),
            "batch/padding_frac": (totals["padded_tokens"] - totals["real_tokens"]) / max(1.0, totals["real_tokens"]),
            "batch/prefix_shared_frac": totals["shared_tokens"] / max(1.0, totals["real_tokens"]),
            "rollout/logprob_gap": totals["logprob_gap"] / tokens,
        }
        if self.config.loss.entropy_coef > 0:
            metrics["entropy"] = totals["entropy"] / tokens
        if self.reference is not None:
            metrics["loss/kl"] = totals["kl"] / steps
        return metrics


def lr_schedule(config: TrainerConfig, total_steps: int) -> Callable[[int], float]:
    """The learning-rate factor per optimizer step: linear warm-up, then constant, linear or cosine decay to 0.

    ``total_steps`` rollout batches of ``ceil(prompts_per_batch / mini_batch_prompts) × ppo_epochs``
    optimizer steps each.
    """
    optim = config.optim
    minibatches = math.ceil(config.rollout.prompts_per_batch / config.update.mini_batch_prompts)
    optimizer_steps = total_steps * minibatches * config.update.ppo_epochs

    def factor(optimizer_step: int) -> float:
        if optim.warmup_steps and optimizer_step < optim.warmup_steps:
            return (optimizer_step + 1) / optim.warmup_steps
        if optim.schedule == "constant":
            return 1.0
        total = max(1, optimizer_steps - optim.warmup_steps)
        progress = min(1.0, (optimizer_step - optim.warmup_steps) / total)
        if optim.schedule == "linear":
            return 1.0 - progress
        return 0.5 * (1.0 + math.cos(math.pi * progress))

    return factor
