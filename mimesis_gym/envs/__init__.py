"""The environments, one sub-package each, and the one table that registers and reports them.

``ENV_TABLE`` lists every env id the package ships (see :class:`~mimesis_gym.envs.table.EnvEntry`
for the fields). Gymnasium registration, ``mimesis-gym list``, the default ``eval`` env list, the
Avg weights, the column titles and the held-out marks are all read from it. An env of your own
joins at run time with :func:`register_env`, by a ``module:id`` name whose module registers it, or
from an installed plug-in package through the entry-point group ``mimesis_gym.envs``, loaded at the
first lookup or listing (docs/writing-an-env.md, "As a plug-in package").
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import gymnasium as gym

from mimesis_gym.core.plugins import EntryPointGroup
from mimesis_gym.envs.table import EnvEntry, EnvTable

__all__ = [
    "ENTRY_POINT_GROUP",
    "ENV_IDS",
    "ENV_TABLE",
    "EnvEntry",
    "EnvTable",
    "load_env_plugins",
    "register_env",
    "register_envs",
    "scoped_env_registrations",
]

ENTRY_POINT_GROUP = "mimesis_gym.envs"


ENV_TABLE = EnvTable(
    [
        # The paper's eight columns (the main job). Avg weights: the upstream test-task counts (Σ = 1010).
        EnvEntry(
            id="mimesis/TravelGym-v0",
            entry_point="mimesis_gym.envs.travel.env:TravelEnv",
            short="travel",
            title="Travel",
            column=1,
            avg_weight=471,
            main_job=True,
        ),
        EnvEntry(
            id="mimesis/TurtleGym-v0",
            entry_point="mimesis_gym.envs.turtle.env:TurtleEnv",
            short="turtle",
            title="Turtle",
            column=2,
            avg_weight=48,
            main_job=True,
        ),
        EnvEntry(
            id="mimesis/FunctionGym-v0",
            entry_point="mimesis_gym.envs.function.env:FunctionEnv",
            short="function",
            title="Function",
            column=3,
            avg_weight=78,
            main_job=True,
        ),
        EnvEntry(
            id="mimesis/TauGym-v0",
            entry_point="mimesis_gym.envs.tau.env:TauEnv",
            short="tau",
            title="Tau",
            column=4,
            avg_weight=165,
            main_job=True,
        ),
        EnvEntry(
            id="mimesis/PersuadeGym-v0",
            entry_point="mimesis_gym.envs.persuade.env:PersuadeEnv",
            short="persuade",
            title="Persuade",
            column=5,
            avg_weight=42,
            main_job=True,
        ),
        EnvEntry(
            id="mimesis/IntentionGym-v0",
            entry_point="mimesis_gym.envs.intention.env:IntentionEnv",
            short="intention",
            title="Intention",
            column=6,
            avg_weight=40,
            held_out=True,
            wide_scale=True,  # a sum over the task's missing details, up to ~300
            main_job=True,
        ),
        EnvEntry(
            id="mimesis/TelepathyGym-v0",
            entry_point="mimesis_gym.envs.telepathy.env:TelepathyEnv",
            short="telepathy",
            title="Telepathy",
            column=7,
            avg_weight=41,
            held_out=True,
            main_job=True,
        ),
        EnvEntry(
            id="mimesis/SearchGym-v0",
            entry_point="mimesis_gym.envs.search.env:SearchEnv",
            short="search",
            title="Search",
            column=8,
            avg_weight=125,
            held_out=True,
            main_job=True,
        ),
        EnvEntry(
            id="mimesis/ABCDBehavior-v0",
            entry_point="mimesis_gym.envs.abcd.env:ABCDBehaviorEnv",
            short="abcd",
            title="ABCD",
            summary="abcd",
        ),
        EnvEntry(
            id="mimesis/HumanReplay-v0",
            entry_point="mimesis_gym.envs.replay.env:HumanReplayEnv",
            short="replay",
            title="Human replay",
            max_episode_steps=None,  # ends with its conversation
        ),
        EnvEntry(
            id="mimesis/TelepathyDiscrete-v0",
            entry_point="mimesis_gym.envs.telepathy.discrete:TelepathyDiscreteEnv",
            short="telepathy-discrete",
            title="Telepathy (discrete)",
            kind="view",
            max_episode_steps=None,  # the wrapped TelepathyGym truncates
        ),
    ]
)
"""Every env id the package ships, in the order ``list`` shows them."""

ENV_IDS: tuple[str, ...] = ENV_TABLE.ids("conversation")
"""The shipped conversation env ids (the contract suite's set); views such as TelepathyDiscrete are
in ``ENV_TABLE`` but not here."""


def _register(entry: EnvEntry) -> None:
    if entry.id not in gym.registry:
        gym.register(id=entry.id, entry_point=entry.entry_point, max_episode_steps=entry.max_episode_steps)


@contextlib.contextmanager
def scoped_env_registrations() -> Iterator[EnvTable]:
    """Envs registered inside the block (``register_env``, a test's own ``gym.register``) are gone after
    it, from ``ENV_TABLE`` and from Gymnasium's registry: for tests and notebooks with envs of their own."""
    saved_entries, saved_ids = ENV_TABLE.snapshot(), set(gym.registry)
    try:
        yield ENV_TABLE
    finally:
        ENV_TABLE.restore(saved_entries)
        for env_id in set(gym.registry) - saved_ids:
            del gym.registry[env_id]


def register_envs() -> None:
    """Register every id of ``ENV_TABLE`` with Gymnasium; calling it again changes nothing.

    Plug-ins are not loaded here (the package import calls this; a plug-in imports the package).
    """
    for entry in ENV_TABLE.loaded():
        _register(entry)


def register_env(entry: EnvEntry) -> None:
    """Add ``entry`` to ``ENV_TABLE`` and register it with Gymnasium (an env of your own).

    Raises ``ValueError`` when the id, short name or column is taken, or the id is already
    registered with Gymnasium by someone else.
    """
    if entry.id in gym.registry:
        raise ValueError(f"{entry.id!r} is already registered with Gymnasium; pick another id")
    ENV_TABLE.add(entry)
    _register(entry)


def _register_plugin(name: str, value: Any) -> None:
    """Register what an entry point of ``mimesis_gym.envs`` gives: an :class:`EnvEntry`, or a callable
    returning one or several. An entry already in the table as it is (its module registered it on
    import) is left alone."""
    produced = value() if callable(value) else value
    entries = [produced] if isinstance(produced, EnvEntry) else produced
    if not isinstance(entries, (list, tuple)) or not all(isinstance(entry, EnvEntry) for entry in entries):
        raise TypeError(
            f"an env plug-in gives an EnvEntry or a callable returning one or a list of them; got {produced!r}"
        )
    for entry in entries:
        if ENV_TABLE.get(entry.short) != entry:
            register_env(entry)


_PLUGINS = EntryPointGroup(ENTRY_POINT_GROUP, _register_plugin)


def load_env_plugins() -> None:
    """Add the envs of the installed plug-in packages (entry-point group ``mimesis_gym.envs``) to
    ``ENV_TABLE`` and Gymnasium, once. Every lookup in ``ENV_TABLE`` calls it; so does a worker
    process before it builds an env by id. ``ConfigurationError`` naming a plug-in that fails."""
    _PLUGINS.load()


ENV_TABLE.plug_in(load_env_plugins)
