"""Moved to :mod:`mimesis_gym.algorithms.learners.csd.coach`: its names, re-exported at the old path."""

from mimesis_gym.algorithms.learners.csd.coach import *  # noqa: F403
from mimesis_gym.algorithms.learners.csd.coach import __all__  # noqa: F401
