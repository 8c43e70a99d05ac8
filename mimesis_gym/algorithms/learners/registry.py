"""The registry of learners, keyed by algorithm name.

See docs/algorithms.md, "Learners and the trainer's modules"; docs/writing-a-learner.md.

An ``algorithm`` name selects a configuration and the learners that run with it:

* the built-in names of :data:`~mimesis_gym.algorithms.config.ALGORITHMS` (``grpo``,
  ``grpo-outcome``, ``foldgrpo``, ``infopo``, ``csd``) set ``advantage.estimator`` and
  ``csd.enabled``; every registered learner whose :meth:`~Learner.enabled` holds for the resulting
  config runs (so a config file alone can turn InfoPO or CSD on);
* a learner registered at run time (:func:`register_learner`), and the built-in ``sft``, is selected
  by its own name and runs with the config's estimator and CSD off.
"""

from __future__ import annotations

from mimesis_gym.algorithms.config import ALGORITHMS, AlgorithmConfig, TrainerConfig
from mimesis_gym.algorithms.learners.base import Learner
from mimesis_gym.algorithms.learners.csd.learner import CSD
from mimesis_gym.algorithms.learners.infopo.learner import InfoPO
from mimesis_gym.algorithms.learners.sft.learner import SFT

__all__ = ["LEARNERS", "algorithm_names", "register_learner", "select_learners"]

LEARNERS: dict[str, type[Learner]] = {}
"""Learner classes by name, in the order the loop calls them."""


def register_learner(learner: type[Learner], *, replace: bool = False) -> type[Learner]:
    """Add ``learner`` under ``learner.name`` (usable as a class decorator); a taken name needs ``replace=True``."""
    if not (isinstance(learner, type) and issubclass(learner, Learner)):
        raise TypeError(f"register_learner takes a Learner subclass; got {learner!r}")
    name = learner.name
    if not name:
        raise ValueError(f"{learner.__qualname__}.name is empty: set the algorithm name it is selected by")
    if name in LEARNERS and LEARNERS[name] is not learner and not replace:
        raise ValueError(f"a learner named {name!r} is already registered ({LEARNERS[name].__qualname__})")
    LEARNERS[name] = learner
    return learner


register_learner(InfoPO)
register_learner(CSD)
register_learner(SFT)


def algorithm_names() -> list[str]:
    """Every name ``algorithm=`` accepts: the built-in ones, then the learners registered at run time."""
    return [*ALGORITHMS, *(name for name in LEARNERS if name not in ALGORITHMS)]


def select_learners(
    config: TrainerConfig, algorithm: str | AlgorithmConfig | None
) -> tuple[TrainerConfig, list[type[Learner]]]:
    """The config with ``algorithm`` applied, and the learner classes that run, in registry order.

    Raises ``ValueError`` for an unknown name, a configuration a learner cannot run, or two learners
    that would both replace the advantages.
    """
    named: type[Learner] | None = None
    if isinstance(algorithm, str) and algorithm not in ALGORITHMS:
        named = LEARNERS.get(algorithm)
        if named is None:
            raise ValueError(f"unknown algorithm {algorithm!r}; known: {', '.join(algorithm_names())}")
        algorithm = AlgorithmConfig(advantage=config.advantage, csd=False)
    config = config.with_algorithm(algorithm)
    for learner in LEARNERS.values():
        learner.validate(config)
    chosen = [learner for learner in LEARNERS.values() if learner is named or learner.enabled(config)]
    for learner in chosen:
        learner.check_selected(config)
    replacing = [learner.name for learner in chosen if learner.advantages is not Learner.advantages]
    if len(replacing) > 1:
        raise ValueError(f"learners {', '.join(replacing)} would each replace the advantages; run one of them")
    return config, chosen
