"""InfoPO — the information gain of the user's feedback, in one folder (docs/algorithms.md, "InfoPO").

* :mod:`~mimesis_gym.algorithms.learners.infopo.learner`: the ``InfoPO`` learner (its hooks and metrics);
* :mod:`~mimesis_gym.algorithms.learners.infopo.counterfactual`: the masked-feedback rows and the gains.

The estimator that folds the gains into the advantages is
:func:`~mimesis_gym.algorithms.advantages.infopo` (``advantage.estimator="infopo"``). The names below
load on first use.
"""

from __future__ import annotations

from mimesis_gym.algorithms.lazy import lazy_exports

__all__ = ["InfoPO"]

__getattr__, __dir__ = lazy_exports(__name__, {"InfoPO": ".learner"})
