"""Moved to :mod:`mimesis_gym.algorithms.learners.infopo.counterfactual`: its names, re-exported at the old path."""

from mimesis_gym.algorithms.learners.infopo.counterfactual import *  # noqa: F403
from mimesis_gym.algorithms.learners.infopo.counterfactual import __all__  # noqa: F401
