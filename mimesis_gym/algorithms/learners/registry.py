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

A learner of another package joins without code that calls :func:`register_learner`: as
``algorithm="my_pkg.learners:RLOO"`` (the class is imported and registered), or from an installed
plug-in package through the entry-point group ``mimesis_gym.learners`` (name: the learner's ``name``,
value: the class), loaded at the first lookup or listing (docs/writing-a-learner.md, "As a plug-in
package").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from mimesis_gym.algorithms.config import ALGORITHMS, Algorithm, AlgorithmConfig, TrainerConfig
from mimesis_gym.algorithms.learners.base import Learner
from mimesis_gym.algorithms.learners.csd.learner import CSD
from mimesis_gym.algorithms.learners.infopo.learner import InfoPO
from mimesis_gym.algorithms.learners.sft.learner import SFT
from mimesis_gym.core.imports import import_object
from mimesis_gym.core.plugins import EntryPointGroup

__all__ = [
    "ENTRY_POINT_GROUP",
    "LEARNERS",
    "algorithm_names",
    "load_learner_plugins",
    "register_learner",
    "resolve_algorithm",
    "scoped_learners",
    "select_learners",
]

ENTRY_POINT_GROUP = "mimesis_gym.learners"

LEARNERS: dict[str, type[Learner]] = {}
"""Learner classes by name, in the order the loop calls them."""


@contextlib.contextmanager
def scoped_learners() -> Iterator[dict[str, type[Learner]]]:
    """Learners registered inside the block, and the algorithm rows they added, are gone after it: for
    tests and notebooks with learners of their own."""
    saved, saved_rows = dict(LEARNERS), dict(ALGORITHMS)
    try:
        yield LEARNERS
    finally:
        LEARNERS.clear()
        LEARNERS.update(saved)
        ALGORITHMS.clear()
        ALGORITHMS.update(saved_rows)


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


def _register_plugin(name: str, value: Any) -> None:
    """Register the learner class an entry point of ``mimesis_gym.learners`` names; its name must be the class's."""
    if not (isinstance(value, type) and issubclass(value, Learner)):
        raise TypeError(f"a learner plug-in names a Learner subclass; got {value!r}")
    if value.name != name:
        raise ValueError(f"the entry point is named {name!r} but {value.__qualname__}.name is {value.name!r}")
    register_learner(value)


_PLUGINS = EntryPointGroup(ENTRY_POINT_GROUP, _register_plugin)


def load_learner_plugins() -> None:
    """Register the learners of the installed plug-in packages (entry-point group ``mimesis_gym.learners``)
    once; ``ConfigurationError`` naming a plug-in that fails. Lookups and listings call it."""
    _PLUGINS.load()


def resolve_algorithm(name: str) -> str:
    """The algorithm-table name ``name`` stands for: ``module:Class`` imports the learner class,
    registers it and gives its ``name``; any other name is returned as it is (after the plug-ins load).

    Raises ``ValueError`` naming ``name`` when the class cannot be imported or is not a learner.
    """
    load_learner_plugins()
    if ":" not in name:
        return name
    try:
        learner = import_object(name, setting="algorithm")
    except (ImportError, AttributeError) as error:
        raise ValueError(f"algorithm {name!r}: cannot import it ({error})") from None
    if not (isinstance(learner, type) and issubclass(learner, Learner)):
        raise ValueError(f"algorithm {name!r} is {learner!r}, not a Learner subclass")
    return register_learner(learner).name


def algorithm_names() -> list[str]:
    """Every name ``algorithm=`` accepts: the built-in ones, then the registered learners' own names
    (plug-ins included)."""
    load_learner_plugins()
    return list(ALGORITHMS)


def select_learners(
    config: TrainerConfig, algorithm: str | AlgorithmConfig | None
) -> tuple[TrainerConfig, list[type[Learner]]]:
    """The config with ``algorithm`` applied, and the learner classes that run, in registry order.

    ``algorithm`` may name a learner class as ``module:Class`` (:func:`resolve_algorithm`).
    Raises ``ValueError`` for an unknown name, a configuration a learner cannot run, or two learners
    that would both replace the advantages.
    """
    named: type[Learner] | None = None
    load_learner_plugins()
    if isinstance(algorithm, str):
        algorithm = resolve_algorithm(algorithm)
        row = ALGORITHMS.get(algorithm)
        if row is None or (row.learner is not None and row.learner not in LEARNERS):
            known = ", ".join(algorithm_names())
            raise ValueError(f"unknown algorithm {algorithm!r}; known: {known}, or a learner as 'module:Class'")
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
