"""The learners, one folder each, and the registry that maps an ``algorithm`` name to them.

See docs/algorithms.md, "Learners and the trainer's modules"; docs/writing-a-learner.md.

* :mod:`~mimesis_gym.algorithms.learners.base`: the seam, ``Learner`` and the batches its hooks see;
* :mod:`~mimesis_gym.algorithms.learners.registry`: ``LEARNERS``, ``register_learner``,
  ``algorithm_names``, ``resolve_algorithm`` (``module:Class`` names) and ``select_learners``;
* ``csd/``, ``infopo/``, ``sft/``: each built-in learner with its math and helpers.

The names below load on first use, so importing a learner's torch-free helper (the CSD coach, SFT's
data format) does not import torch.
"""

from __future__ import annotations

from mimesis_gym.algorithms.lazy import lazy_exports

__all__ = [
    "LEARNERS",
    "Learner",
    "MicroBatch",
    "RolloutBatch",
    "algorithm_names",
    "register_learner",
    "resolve_algorithm",
    "select_learners",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Learner": ".base",
        "MicroBatch": ".base",
        "RolloutBatch": ".base",
        "LEARNERS": ".registry",
        "algorithm_names": ".registry",
        "register_learner": ".registry",
        "resolve_algorithm": ".registry",
        "select_learners": ".registry",
    },
)
