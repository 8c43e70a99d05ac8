"""Moved to :mod:`mimesis_gym.algorithms.learners.csd.loss`: its names, re-exported at the old path."""

from mimesis_gym.algorithms.learners.csd.loss import *  # noqa: F403
from mimesis_gym.algorithms.learners.csd.loss import __all__  # noqa: F401
