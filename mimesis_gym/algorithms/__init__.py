"""Learners that turn the environments into training signal (docs/algorithms.md).

The estimators (``advantages``), the PPO-clip core (``losses``), the token-exact records and
collectors (``records``, ``render``, ``rollout``, ``engines``), batching and log-probs
(``batching``, ``logprobs``), the configuration and the one table of algorithm names (``config``)
and the trainer: its loop (``trainer``), the services it shares with the learners (``services``),
the data order (``tasks``), the policy checks (``policy``), the advantage phase
(``advantage_step``), the update (``update``) and the learners, one folder each with its math and
helpers, registered by name (``learners``: ``csd``, ``infopo``, ``sft``), each module at one path
only (e.g. ``mimesis_gym.algorithms.learners.csd.coach``)::

    from mimesis_gym.algorithms import train, TrainerConfig
    result = train(["mimesis/TelepathyGym-v0"], policy="tiny", user="scripted", algorithm="grpo",
                   config=TrainerConfig.preset("cpu-tiny"))

The names below are imported lazily, so ``import mimesis_gym`` never imports torch.
"""

from __future__ import annotations

from mimesis_gym.algorithms.lazy import lazy_exports

__all__ = [
    "AlgorithmConfig",
    "Episode",
    "Learner",
    "Segment",
    "TrainResult",
    "Trainer",
    "TrainerConfig",
    "Turn",
    "register_learner",
    "train",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "AlgorithmConfig": ".config",
        "TrainerConfig": ".config",
        "Episode": ".records",
        "Learner": ".learners",
        "register_learner": ".learners",
        "Segment": ".records",
        "Turn": ".records",
        "TrainResult": ".trainer",
        "Trainer": ".trainer",
        "train": ".trainer",
    },
)
