"""CSD, in one folder (docs/algorithms.md, "CSD — Coached On-Policy Self-Distillation").

* :mod:`~mimesis_gym.algorithms.learners.csd.learner`: the ``CSD`` learner (its hooks) and
  ``make_coach``;
* :mod:`~mimesis_gym.algorithms.learners.csd.loss`: the gate and the loss term;
* :mod:`~mimesis_gym.algorithms.learners.csd.coach`: turn selection, coach requests, chat and scripted coaches;
* :mod:`~mimesis_gym.algorithms.learners.csd.notes`: cleaning a note and the privacy leak filter;
* :mod:`~mimesis_gym.algorithms.learners.csd.teacher`: the teacher rows (the note as one extra user turn).

Its options are ``TrainerConfig.csd`` (:class:`~mimesis_gym.algorithms.config.CSDConfig`). The names
below load on first use: the coach and the notes import no torch.
"""

from __future__ import annotations

from mimesis_gym.algorithms.lazy import lazy_exports

__all__ = ["CSD", "make_coach"]

__getattr__, __dir__ = lazy_exports(__name__, {"CSD": ".learner", "make_coach": ".learner"})
