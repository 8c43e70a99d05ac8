"""Moved to :mod:`mimesis_gym.algorithms.learners.csd.teacher`: its names, re-exported at the old path."""

from mimesis_gym.algorithms.learners.csd.teacher import *  # noqa: F403
from mimesis_gym.algorithms.learners.csd.teacher import __all__  # noqa: F401
