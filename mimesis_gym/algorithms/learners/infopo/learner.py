"""The InfoPO learner (docs/algorithms.md, "InfoPO"): the masked-feedback counterfactual pass and its metrics.

On with ``advantage.estimator="infopo"``. :meth:`InfoPO.prepare` scores, for every turn whose
feedback is not empty, the next action under a copy of the sequence with the feedback replaced by
the placeholder (``counterfactual`` forwards, no grad, this rank's rows), turns the differences into
information gains ``episode.info_gain`` and all-gathers them; the ``infopo`` estimator then folds
them into the advantages. :meth:`InfoPO.metrics` logs the gains, the gate and the intrinsic share.
"""

from __future__ import annotations

import math
from typing import Any

from mimesis_gym.algorithms import advantages as estimators
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners.base import Learner, RolloutBatch
from mimesis_gym.algorithms.learners.infopo.counterfactual import counterfactual_rows, information_gains

__all__ = ["InfoPO"]


class InfoPO(Learner):
    """Information gain of the user's feedback, credited to the action that asked for it."""

    name = "infopo"
    compares_forwards = True
    needs_old_logprobs = True

    @classmethod
    def enabled(cls, config: TrainerConfig) -> bool:
        return config.advantage.estimator == "infopo"

    @classmethod
    def validate(cls, config: TrainerConfig) -> None:
        if config.advantage.estimator == "infopo" and config.rollout.context_mode != "accumulate":
            raise ValueError("InfoPO needs rollout.context_mode='accumulate' (feedback spans inside one sequence)")

    def prepare(self, batch: RolloutBatch) -> dict[str, float]:
        """Counterfactual forwards on this rank's rows; every episode gets ``info_gain`` (all-gathered)."""
        services, episodes, my_rows = self.services, batch.episodes, batch.my_rows
        placeholder = services.renderer.encode(self.config.advantage.placeholder)
        jobs = [(row.episode, cf) for row in my_rows for cf in counterfactual_rows(episodes[row.episode], placeholder)]
        sequences = [cf.input_ids for _, cf in jobs]
        masks = [
            [1 if cf.score_span[0] <= k < cf.score_span[1] else 0 for k in range(len(cf.input_ids))] for _, cf in jobs
        ]
        values = services.score(sequences, masks, "counterfactual") if services.max_over_ranks(len(jobs)) else []
        gains: dict[str, list[float]] = {}
        for row in my_rows:
            episode = episodes[row.episode]
            mine = [(cf, v) for (e, cf), v in zip(jobs, values, strict=True) if e == row.episode]
            gains[episode.rollout_id] = information_gains(episode, [cf for cf, _ in mine], [v for _, v in mine])
        merged: dict[str, list[float]] = {}
        for part in services.gather([gains]):
            merged.update(part)
        for episode in episodes:
            episode.info_gain = merged.get(episode.rollout_id, [0.0] * max(0, len(episode.turns) - 1))
        return {}

    def metrics(self, batch: RolloutBatch) -> dict[str, float]:
        """``infopo/*``: the gains of turns with feedback, λ, β, the gate per group and the intrinsic share."""
        cfg = self.config.advantage
        episodes, diagnostics = batch.episodes, batch.diagnostics
        options = cfg.estimator_options()
        outcome = estimators.grpo_multiturn(
            [e.estimator_input() for e in episodes],
            gamma=cfg.gamma,
            trajectory_score=options["trajectory_score"],
            turn_credit=options["turn_credit"],
        )
        out_abs = in_abs = 0.0
        for episode, out_row in zip(episodes, outcome, strict=True):
            for total, base, n in zip(episode.turn_advantages or [], out_row, episode.turn_token_counts, strict=True):
                out_abs += abs(base) * n
                in_abs += abs(total - base) * n
        gains = [g for e in episodes for g, t in zip(e.info_gain or [], e.turns, strict=False) if t.feedback_span]
        gates: list[Any] = list(diagnostics.get("gate", {}).values()) or [0.0]
        stds: list[Any] = list(diagnostics.get("group_std", {}).values()) or [0.0]
        ig_mean = sum(gains) / len(gains) if gains else 0.0
        return {
            "infopo/ig_mean": ig_mean,
            "infopo/ig_std": math.sqrt(sum((g - ig_mean) ** 2 for g in gains) / len(gains)) if gains else 0.0,
            "infopo/ig_pos_frac": sum(1 for g in gains if g > 0) / len(gains) if gains else 0.0,
            "infopo/ig_turns": float(len(gains)),
            "infopo/lambda": float(diagnostics.get("lambda_", 1.0)),
            "infopo/gate_mean": sum(gates) / len(gates),
            "infopo/gate_min": min(gates),
            "infopo/gate_max": max(gates),
            "infopo/group_std_mean": sum(stds) / len(stds),
            "infopo/beta": float(diagnostics.get("beta", cfg.beta0)),
            "infopo/intrinsic_share": in_abs / (out_abs + in_abs) if out_abs + in_abs else 0.0,
        }
