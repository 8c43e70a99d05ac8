"""Learners that turn the environments into training signal (docs/algorithms.md).

The estimators (``advantages``), the PPO-clip core (``losses``), CSD (``csd``, ``coach_notes``,
``coach_runner``, ``teacher``), InfoPO's counterfactuals (``infopo``), the token-exact records and
collectors (``records``, ``render``, ``rollout``, ``engines``), batching and log-probs
(``batching``, ``logprobs``), the configuration (``config``) and the trainer: its loop
(``trainer``), the services it shares with the learners (``services``), the data order (``tasks``),
the policy checks (``policy``), the advantage phase (``advantage_step``), the update (``update``)
and the learners' own passes, registered by name (``learners``: InfoPO, CSD)::

    from mimesis_gym.algorithms import train, TrainerConfig
    result = train(["mimesis/TelepathyGym-v0"], policy="tiny", user="scripted", algorithm="grpo",
                   config=TrainerConfig.preset("cpu-tiny"))

The names below are imported lazily, so ``import mimesis_gym`` never imports torch.
"""

from __future__ import annotations

import importlib
from typing import Any

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

_LAZY = {
    "AlgorithmConfig": "mimesis_gym.algorithms.config",
    "TrainerConfig": "mimesis_gym.algorithms.config",
    "Episode": "mimesis_gym.algorithms.records",
    "Learner": "mimesis_gym.algorithms.learners",
    "register_learner": "mimesis_gym.algorithms.learners",
    "Segment": "mimesis_gym.algorithms.records",
    "Turn": "mimesis_gym.algorithms.records",
    "TrainResult": "mimesis_gym.algorithms.trainer",
    "Trainer": "mimesis_gym.algorithms.trainer",
    "train": "mimesis_gym.algorithms.trainer",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mimesis_gym.algorithms' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
