"""Moved to :mod:`mimesis_gym.algorithms.learners.csd.notes`: its names, re-exported at the old path."""

from mimesis_gym.algorithms.learners.csd.notes import *  # noqa: F403
from mimesis_gym.algorithms.learners.csd.notes import __all__  # noqa: F401
