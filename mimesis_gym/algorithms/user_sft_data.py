"""Moved to :mod:`mimesis_gym.algorithms.learners.sft.user_data`: its names, re-exported at the old path."""

from mimesis_gym.algorithms.learners.sft.user_data import *  # noqa: F403
from mimesis_gym.algorithms.learners.sft.user_data import __all__  # noqa: F401
