"""RLOO: REINFORCE with the leave-one-out baseline of the episode's group (the plug-in's learner).

Every action token of an episode gets ``A_i = R_i − mean(R_j, j ≠ i)`` over the other episodes of its
group (same task, same seed); a group of one gets 0. The trainer does the rest (docs/writing-a-learner.md):
the learner only overrides :meth:`~mimesis_gym.algorithms.learners.Learner.advantages` and ``metrics``.
"""

from __future__ import annotations

from collections import defaultdict

from mimesis_gym.algorithms.learners import Learner, RolloutBatch

__all__ = ["RLOO"]


class RLOO(Learner):
    """Leave-one-out advantages per group; ``algorithm: rloo`` once the package is installed."""

    name = "rloo"

    def advantages(self, batch: RolloutBatch) -> list[list[float]]:
        groups: dict[str, list[float]] = defaultdict(list)
        for episode in batch.episodes:
            groups[episode.group_id].append(episode.reward_sum)
        values = []
        for episode in batch.episodes:
            rewards, own = groups[episode.group_id], episode.reward_sum
            baseline = (sum(rewards) - own) / (len(rewards) - 1) if len(rewards) > 1 else own
            values.append([own - baseline] * len(episode.turns))
        return values

    def metrics(self, batch: RolloutBatch) -> dict[str, float]:
        return {"rloo/groups": float(len({episode.group_id for episode in batch.episodes}))}
