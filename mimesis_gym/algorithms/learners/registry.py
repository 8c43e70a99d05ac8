"""The learner registry: :data:`LEARNERS` by name, and the rows it adds to the one algorithm table.

See docs/algorithms.md, "Learners and the trainer's modules"; docs/writing-a-learner.md.

What ``algorithm=<name>`` means is one row of the one table,
:data:`~mimesis_gym.algorithms.config.ALGORITHMS` (:class:`~mimesis_gym.algorithms.config.Algorithm`):
the estimator and ``csd.enabled`` it sets and the learner it is for. Every registered learner whose
:meth:`~Learner.enabled` holds for the resulting config runs, in registry order, and so does the row's
learner when the row runs it by name:

* the built-in rows ``grpo``, ``grpo-outcome``, ``foldgrpo`` set an estimator (the plain loop);
  ``infopo`` sets the estimator that turns InfoPO on, ``csd`` the switch that turns CSD on (so a config
  file alone turns them on too, and ``csd`` with ``csd.alpha=0`` runs no CSD);
* :func:`register_learner` adds the row ``Algorithm(learner=name)`` for any other learner (the built-in
  ``sft`` and every learner registered at run time): its name runs it, with the config's estimator and
  CSD off.
"""

from __future__ import annotations

from mimesis_gym.algorithms.config import ALGORITHMS, Algorithm, AlgorithmConfig, TrainerConfig
from mimesis_gym.algorithms.learners.base import Learner
from mimesis_gym.algorithms.learners.csd.learner import CSD
from mimesis_gym.algorithms.learners.infopo.learner import InfoPO
from mimesis_gym.algorithms.learners.sft.learner import SFT

__all__ = ["LEARNERS", "algorithm_names", "register_learner", "select_learners"]

LEARNERS: dict[str, type[Learner]] = {}
"""Learner classes by name, in the order the loop calls them."""


def register_learner(learner: type[Learner], *, replace: bool = False) -> type[Learner]:
    """Add ``learner`` under ``learner.name`` and ``algorithm=<name>`` for it (usable as a class decorator).

    A name taken by another learner needs ``replace=True``; a built-in algorithm name (``grpo``, ...)
    is refused, since that name already means something else.
    """
    if not (isinstance(learner, type) and issubclass(learner, Learner)):
        raise TypeError(f"register_learner takes a Learner subclass; got {learner!r}")
    name = learner.name
    if not name:
        raise ValueError(f"{learner.__qualname__}.name is empty: set the algorithm name it is selected by")
    row = ALGORITHMS.get(name)
    if row is not None and row.learner != name:
        raise ValueError(
            f"{learner.__qualname__}.name {name!r} is a built-in algorithm (advantage.estimator="
            f"{row.estimator}, csd.enabled={row.csd}) that would never run it: choose another name"
        )
    if name in LEARNERS and LEARNERS[name] is not learner and not replace:
        raise ValueError(f"a learner named {name!r} is already registered ({LEARNERS[name].__qualname__})")
    LEARNERS[name] = learner
    if row is None:
        ALGORITHMS[name] = Algorithm(learner=name)
    return learner


register_learner(InfoPO)
register_learner(CSD)
register_learner(SFT)


def algorithm_names() -> list[str]:
    """Every name ``algorithm=`` accepts: the built-in ones, then the registered learners' own names."""
    return list(ALGORITHMS)


def select_learners(
    config: TrainerConfig, algorithm: str | AlgorithmConfig | None
) -> tuple[TrainerConfig, list[type[Learner]]]:
    """The config with ``algorithm`` applied, and the learner classes that run, in registry order.

    Raises ``ValueError`` for an unknown name, a configuration a learner cannot run, or two learners
    that would both replace the advantages.
    """
    named: type[Learner] | None = None
    if isinstance(algorithm, str):
        row = ALGORITHMS.get(algorithm)
        if row is None or (row.learner is not None and row.learner not in LEARNERS):
            raise ValueError(f"unknown algorithm {algorithm!r}; known: {', '.join(algorithm_names())}")
        named = LEARNERS[row.learner] if row.learner is not None and row.by_name else None
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
