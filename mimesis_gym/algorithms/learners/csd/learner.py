"""The CSD learner: coach notes, teacher log-probs, placebo notes and the gated loss term.

See docs/algorithms.md, "CSD — Coached On-Policy Self-Distillation".

On with ``csd.enabled`` and ``csd.alpha > 0`` (``α = 0`` is the GRPO control: no CSD work at all).
Per rollout batch (:meth:`CSD.prepare`, from step ``warmup_steps + 1`` on), the coach writes notes
for the episodes this rank collected (gathered to every rank), placebo notes are drawn from the ring
of earlier notes, and each coached turn gets its teacher rows (real and placebo). Per micro-batch,
:meth:`CSD.before_forward` runs the no-grad teacher forward under the current weights and
:meth:`CSD.extra_loss` adds ``α · L_CSD`` with its gate statistics. The placebo ring is saved with
the checkpoint (``placebo_pool``).
"""

from __future__ import annotations

import math
import random
from collections import Counter, deque
from typing import Any

import torch

from mimesis_gym.algorithms.batching import Row
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners.base import Learner, MicroBatch, RolloutBatch
from mimesis_gym.algorithms.learners.csd.coach import ChatCoach, CoachStats, ScriptedCoach, coach_episodes
from mimesis_gym.algorithms.learners.csd.loss import csd_gate, csd_loss
from mimesis_gym.algorithms.learners.csd.teacher import TeacherRow, build_teacher_row
from mimesis_gym.algorithms.records import Episode
from mimesis_gym.algorithms.services import LoopServices

__all__ = ["CSD", "make_coach"]

PER_RANK_SUMS = ("csd_tokens", "csd_gate", "csd_gate_active", "csd_delta", "csd_delta_sq", "csd_loss", "csd_release")
"""Sums each rank accumulates over its micro-batches (reduced over ranks for the metrics)."""
COACH_COUNTS = ("episodes", "requests", "notes", "none", "failed", "dropped_leak")

TeacherPair = tuple[TeacherRow, TeacherRow | None]


def make_coach(config: TrainerConfig, user_model: Any) -> Any:
    """The coach of ``csd.coach``: a scripted callable, or a chat model (its own, else the envs' user model)."""
    coach = config.csd.coach
    if coach.kind == "scripted":
        return ScriptedCoach(coach.callable)  # type: ignore[arg-type]
    if coach.model is not None:
        from mimesis_gym.users.registry import make_chat_model

        model = make_chat_model(coach.model)
    else:
        model = None if user_model == "scripted" else user_model
    if model is None:
        raise ValueError(
            "csd.coach: kind='chat' needs a chat model, and the env's user is scripted; set csd.coach.model "
            "to a users-registry alias, or csd.coach.kind='scripted' with csd.coach.callable"
        )
    return ChatCoach(model, max_tokens=coach.max_tokens, temperature=coach.temperature)


class CSD(Learner):
    """Coached On-Policy Self-Distillation: ``L = L_PPO + α · L_CSD`` on the agent's own tokens."""

    name = "csd"
    compares_forwards = True

    @classmethod
    def enabled(cls, config: TrainerConfig) -> bool:
        return config.csd.enabled and config.csd.alpha > 0

    @classmethod
    def validate(cls, config: TrainerConfig) -> None:
        if config.csd.enabled and config.csd.coach.kind == "scripted" and config.csd.coach.callable is None:
            raise ValueError("csd.coach: kind='scripted' needs csd.coach.callable ('module:function' or a callable)")

    @classmethod
    def env_kwargs(cls, config: TrainerConfig) -> dict[str, Any]:
        return {"privileged": True}  # the coach reads the user's thoughts

    def __init__(self, services: LoopServices) -> None:
        super().__init__(services)
        self.coach = make_coach(self.config, services.user_model)
        self.coach_loop: Any = None
        self.placebo_pool: list[tuple[str, str]] = []
        self.active = False
        self.batch: RolloutBatch | None = None
        self.coached: dict[int, list[TeacherPair]] = {}
        self.rows_skipped = self.placebo_turns = self.coached_turn_count = 0
        self.sums: Counter[str] = Counter()
        self.minibatch_coached_tokens = 0
        self.micro: tuple[torch.Tensor, ...] | None = None

    # ------------------------------------------------------------------ per rollout batch

    def prepare(self, batch: RolloutBatch) -> dict[str, float]:
        """Coach this rank's episodes, gather the notes, draw placebos, build the teacher rows, extend the ring."""
        cfg, services = self.config.csd, self.services
        self.batch, self.coached, self.sums = batch, {}, Counter()
        self.rows_skipped = self.placebo_turns = self.coached_turn_count = 0
        self.active = batch.step > cfg.warmup_steps
        if not self.active:
            return {}
        stats = coach_episodes(
            batch.local, self.coach, cfg, seed=services.seed(batch.step, 2, services.rank), runner=self.run_coroutine
        )
        notes: dict[str, dict[int, str]] = {}
        for part in services.gather([{e.rollout_id: dict(e.notes) for e in batch.local}]):
            notes.update(part)
        for episode in batch.episodes:
            episode.notes = notes.get(episode.rollout_id, {})
        placebos = self.assign_placebos(batch.episodes, batch.step) if cfg.placebo else {}
        self.coached = self.coached_turns(batch.episodes, placebos)
        self.remember_notes(batch.episodes)
        counts = services.sum_over_ranks({name: getattr(stats, name) for name in COACH_COUNTS})
        return CoachStats(**{name: int(value) for name, value in counts.items()}).metrics()

    def run_coroutine(self, coroutine: Any) -> Any:
        """Run a coach coroutine on this learner's own event loop thread (chat clients stay on one loop)."""
        if self.coach_loop is None:
            from mimesis_gym.core.asyncbridge import LoopThread

            self.coach_loop = LoopThread()
        return self.coach_loop.run(coroutine)

    def assign_placebos(self, episodes: list[Episode], step: int) -> dict[tuple[str, int], str]:
        """A note of another rollout per noted turn once the ring holds ``placebo_min`` notes (same on every rank)."""
        cfg = self.config.csd
        pool = list(self.placebo_pool)
        placebos: dict[tuple[str, int], str] = {}
        if len(pool) < cfg.placebo_min:
            return placebos
        rng = random.Random(self.services.seed(step, 5))
        for episode in episodes:
            others = [note for rollout, note in pool if rollout != episode.rollout_id]
            for turn in sorted(episode.notes):
                if others:
                    placebos[(episode.rollout_id, turn)] = rng.choice(others)
        return placebos

    def remember_notes(self, episodes: list[Episode]) -> None:
        ring = deque(self.placebo_pool, maxlen=self.config.csd.placebo_pool)
        for episode in episodes:
            for turn in sorted(episode.notes):
                ring.append((episode.rollout_id, episode.notes[turn]))
        self.placebo_pool = list(ring)

    def coached_turns(
        self, episodes: list[Episode], placebos: dict[tuple[str, int], str]
    ) -> dict[int, list[TeacherPair]]:
        """Per episode (batch index): the teacher rows (real, placebo) of every turn that trains with CSD."""
        rollout = self.config.rollout
        limit = rollout.max_prompt_tokens + rollout.max_response_tokens + self.config.csd.teacher_headroom
        renderer = self.services.renderer
        coached: dict[int, list[TeacherPair]] = {}
        for e, episode in enumerate(episodes):
            for index in sorted(episode.notes):
                turn = episode.turns[index - 1]
                real = build_teacher_row(episode, turn, episode.notes[index], renderer)
                placebo_note = placebos.get((episode.rollout_id, index))
                placebo = build_teacher_row(episode, turn, placebo_note, renderer) if placebo_note else None
                if len(real.input_ids) > limit or (placebo is not None and len(placebo.input_ids) > limit):
                    self.rows_skipped += 1
                    continue
                self.placebo_turns += placebo is not None
                self.coached_turn_count += 1
                coached.setdefault(e, []).append((real, placebo))
        return coached

    # ------------------------------------------------------------------ per mini-batch and micro-batch

    def begin_minibatch(self, rows: list[Row]) -> bool:
        """Count the mini-batch's coached action tokens (every rank's rows): the CSD denominator."""
        assert self.batch is not None, "prepare() comes first"
        episodes = self.batch.episodes
        coached_tokens = 0
        for row in rows:
            for real, _ in self.coached.get(row.episode, []):
                if real.segment == row.segment:
                    start, end = real.student_span
                    coached_tokens += sum(episodes[row.episode].segments[row.segment].loss_mask[start:end])
        self.sums["action_tokens_global"] += sum(r.action_tokens for r in rows)
        self.sums["coached_tokens_global"] += coached_tokens
        self.minibatch_coached_tokens = coached_tokens
        return coached_tokens > 0

    def before_forward(self, micro: MicroBatch) -> None:
        """The teacher forward of the micro-batch's coached turns (no grad, current weights)."""
        self.micro = None
        if not self.coached:
            return
        values = self.teacher_logprobs(micro.batch.episodes, [] if micro.dummy else micro.rows)
        if not micro.dummy:
            self.micro = tuple(micro.collated.place(v) for v in values)

    def teacher_logprobs(
        self, episodes: list[Episode], rows: list[Row]
    ) -> tuple[list[list[float]], list[list[float]], list[list[int]], list[list[int]]]:
        """Per student row: teacher ℓ_T, placebo ℓ_T, coached mask and placebo mask (student positions)."""
        jobs: list[tuple[int, TeacherRow, bool]] = []
        for k, row in enumerate(rows):
            for real, placebo in self.coached.get(row.episode, []):
                if real.segment == row.segment:
                    jobs.append((k, real, False))
                    if placebo is not None:
                        jobs.append((k, placebo, True))
        sequences = [job[1].input_ids for job in jobs]
        masks = []
        for _, teacher_row, _ in jobs:
            start, end = teacher_row.teacher_span
            masks.append([1 if start <= i < end else 0 for i in range(len(teacher_row.input_ids))])
        services = self.services
        values = services.score(sequences, masks, "teacher") if services.max_over_ranks(len(jobs)) else []
        teacher = [[0.0] * r.length for r in rows]
        placebo_values = [[0.0] * r.length for r in rows]
        coached_mask = [[0] * r.length for r in rows]
        placebo_mask = [[0] * r.length for r in rows]
        for (k, row_teacher, is_placebo), logprobs in zip(jobs, values, strict=True):
            start, end = row_teacher.student_span
            target = placebo_values if is_placebo else teacher
            target[k][start:end] = logprobs[start + row_teacher.shift : end + row_teacher.shift]
            mask_target = placebo_mask if is_placebo else coached_mask
            loss_mask = episodes[rows[k].episode].segments[rows[k].segment].loss_mask
            for i in range(start, end):
                mask_target[k][i] = loss_mask[i]
        return teacher, placebo_values, coached_mask, placebo_mask

    def extra_loss(self, micro: MicroBatch, logprobs: torch.Tensor) -> torch.Tensor | None:
        """``α · L_CSD`` over the coached tokens (denominator: the mini-batch's or per micro-batch); gate sums."""
        if self.micro is None:
            return None
        cfg = self.config.csd
        teacher_t, placebo_t, coached_t, placebo_m = self.micro
        denominator = self.minibatch_coached_tokens
        if self.config.loss.token_mean_scope == "microbatch":
            local = int(coached_t.sum().item())
            denominator = max(1, local) * max(1, micro.micro_count)
        reference_logp = torch.where(placebo_m > 0, placebo_t, logprobs.detach())
        term = csd_loss(
            logprobs,
            teacher_t,
            coached_t,
            beta=cfg.beta,
            placebo_logp=reference_logp,
            estimator=cfg.estimator,
            denominator=float(max(1, denominator)),
        )
        with torch.no_grad():
            on = coached_t > 0
            delta = (teacher_t - reference_logp)[on]
            gate = csd_gate(delta, cfg.beta)
            self.sums["csd_tokens"] += int(on.sum().item())
            self.sums["csd_gate"] += float(gate.sum().item())
            self.sums["csd_gate_active"] += int((gate > 0.5).sum().item())
            self.sums["csd_delta"] += float(delta.sum().item())
            self.sums["csd_delta_sq"] += float((delta**2).sum().item())
            self.sums["csd_loss"] += float(term.item())
            release = gate * (teacher_t[on] - logprobs.detach()[on])
            self.sums["csd_release"] += float(release.sum().item()) / max(1, self.minibatch_coached_tokens)
        return cfg.alpha * term

    # ------------------------------------------------------------------ metrics and state

    def metrics(self, batch: RolloutBatch) -> dict[str, float]:
        """``csd/*`` gate statistics over every rank's coached tokens (none before the warm-up ends)."""
        if not self.active:
            return {}
        totals = self.services.sum_over_ranks({name: self.sums[name] for name in PER_RANK_SUMS})
        steps = max(1, len(batch.minibatches) * self.config.update.ppo_epochs)
        coached = totals["csd_tokens"]
        gate_mean = totals["csd_gate"] / max(1.0, coached)
        delta_mean = totals["csd_delta"] / max(1.0, coached)
        variance = max(0.0, totals["csd_delta_sq"] / max(1.0, coached) - delta_mean**2)
        return {
            "csd/gate_mean": gate_mean,
            "csd/gate_active_frac": totals["csd_gate_active"] / max(1.0, coached),
            "csd/delta_mean": delta_mean,
            "csd/delta_std": math.sqrt(variance),
            # identical on every rank: not summed
            "csd/coached_token_frac": float(self.sums["coached_tokens_global"])
            / max(1.0, float(self.sums["action_tokens_global"])),
            "csd/rows_skipped_len": float(self.rows_skipped),
            "csd/placebo_frac": self.placebo_turns / max(1, self.coached_turn_count),
            "csd/loss": totals["csd_loss"] / steps,
            "csd/loss_release_form": totals["csd_release"] / steps,
        }

    def state_dict(self) -> dict[str, Any]:
        return {"placebo_pool": [list(item) for item in self.placebo_pool]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.placebo_pool = [tuple(item) for item in state.get("placebo_pool", [])]  # type: ignore[misc]
