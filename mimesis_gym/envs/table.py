"""The env table's row type and the lookups everything else derives from it.

One :class:`EnvEntry` per Gymnasium id says how the id is registered and how evaluation reports it:
its short name, the title of its score column, its place among the paper's columns, its Avg weight,
whether it was held out from training, whether the main job (``mimesis-gym eval`` with no
``--envs``) plays it, and which summary table shows it. Registration, ``mimesis-gym list``, the
default ``eval`` env list, the aggregation weights, column titles and held-out marks all read the
:class:`EnvTable`; nothing keeps a parallel list of env names.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Literal

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from pydantic import BaseModel, ConfigDict, Field, model_validator

from mimesis_gym.core.env import ConversationEnv

__all__ = ["EnvEntry", "EnvTable"]

SHORT_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class EnvEntry(BaseModel):
    """One env id and how it is registered and reported.

    A ``conversation`` env (a :class:`~mimesis_gym.core.env.ConversationEnv`) can be evaluated and
    contract-checked; a ``view`` (e.g. the discrete-action TelepathyDiscrete) is only registered and
    listed. ``column`` (1-based) puts an env into the paper's score table, weighted in Avg by
    ``avg_weight`` (the upstream test-task count); a conversation env without a column is scored
    the same way in the summary's table of other envs, apart from Avg and MR. ``summary="abcd"``
    routes the env's records to the ABCD customer-policy table instead, and marks the env whose
    policy is the simulated user (``users-report`` plays it as the customer).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    id: str = Field(description="the Gymnasium id, e.g. 'mimesis/TurtleGym-v0'")
    entry_point: str = Field(description="'package.module:Class'")
    short: str = Field(description="short name: records' env field, --envs, --env-arg, table keys")
    title: str = Field(description="column title in summaries")
    kind: Literal["conversation", "view"] = "conversation"
    column: int | None = Field(None, ge=1, description="position among the paper's score columns")
    avg_weight: int | None = Field(None, ge=1, description="Avg weight: the upstream test-task count")
    held_out: bool = Field(False, description="held out from training in the paper (marked * in tables)")
    main_job: bool = Field(False, description="played by `mimesis-gym eval` without --envs")
    summary: Literal["scores", "abcd"] = "scores"
    wide_scale: bool = Field(False, description="scores run far past 100 (Intention): plotted in their own panel")
    max_episode_steps: int | None = Field(16, ge=1, description="Gymnasium TimeLimit; None: the env truncates itself")

    @model_validator(mode="after")
    def _consistent(self) -> EnvEntry:
        if self.short != self.id and not SHORT_NAME.match(self.short):
            raise ValueError(f"short name {self.short!r} must be lower case letters, digits, '_' or '-' (or the id)")
        if ":" not in self.entry_point:
            raise ValueError(f"entry_point {self.entry_point!r} must read 'package.module:Class'")
        if (self.column is None) != (self.avg_weight is None):
            raise ValueError(f"{self.id}: a paper column needs an Avg weight and an Avg weight a column")
        if self.held_out and self.column is None:
            raise ValueError(f"{self.id}: held_out marks a paper column; set column and avg_weight")
        if self.kind == "view" and (self.main_job or self.column is not None or self.summary != "scores"):
            raise ValueError(f"{self.id}: a view is not evaluated; it takes no column, main_job or summary")
        if self.column is not None and self.summary != "scores":
            raise ValueError(f"{self.id}: a paper column is reported in the score table (summary='scores')")
        return self

    def env_class(self) -> Any:
        """The class behind ``entry_point`` (imported on first use), e.g. to read ``load_task_pack``
        or ``scoring`` without building an env."""
        return load_env_creator(self.entry_point)


class EnvTable:
    """The ordered env entries with unique ids, short names and columns.

    Every lookup and listing first calls the table's plug-in loader (:meth:`plug_in`), which adds the
    envs of installed plug-in packages once; :meth:`loaded` reads the entries without it.
    """

    def __init__(self, entries: Iterable[EnvEntry] = ()) -> None:
        self._entries: dict[str, EnvEntry] = {}
        self._plugins: Callable[[], None] | None = None
        for entry in entries:
            self.add(entry)

    def plug_in(self, loader: Callable[[], None]) -> None:
        """Call ``loader`` before every lookup or listing (it loads the plug-ins once and raises their failure)."""
        self._plugins = loader

    def add(self, entry: EnvEntry) -> None:
        """Append ``entry``; ``ValueError`` when its id, short name or column is taken."""
        for other in self._entries.values():
            if other.id == entry.id:
                raise ValueError(f"env id {entry.id!r} is already in the env table")
            if other.short == entry.short:
                raise ValueError(f"short name {entry.short!r} of {entry.id} is already used by {other.id}")
            if entry.column is not None and other.column == entry.column:
                raise ValueError(f"column {entry.column} of {entry.id} is already {other.short}'s")
        self._entries[entry.id] = entry

    def snapshot(self) -> dict[str, EnvEntry]:
        """The entries as they are now, for :meth:`restore`."""
        return dict(self._entries)

    def restore(self, entries: dict[str, EnvEntry]) -> None:
        """Put the entries of a :meth:`snapshot` back (envs added since are dropped)."""
        self._entries.clear()
        self._entries.update(entries)

    def __iter__(self) -> Iterator[EnvEntry]:
        if self._plugins is not None:
            self._plugins()
        return iter(self.loaded())

    def loaded(self) -> tuple[EnvEntry, ...]:
        """The entries added so far, in order, without loading plug-ins."""
        return tuple(self._entries.values())

    def __len__(self) -> int:
        return len(self._entries)

    def ids(self, kind: str | None = "conversation") -> tuple[str, ...]:
        """The ids in table order, of one ``kind`` (``None``: all)."""
        return tuple(entry.id for entry in self if kind is None or entry.kind == kind)

    def paper_columns(self) -> tuple[EnvEntry, ...]:
        """The entries of the paper's score table, in column order."""
        return tuple(sorted((entry for entry in self if entry.column is not None), key=lambda e: e.column or 0))

    def column_names(self) -> tuple[str, ...]:
        """The short names of :meth:`paper_columns`."""
        return tuple(entry.short for entry in self.paper_columns())

    def avg_weights(self) -> dict[str, int]:
        """Short name → Avg weight of every paper column (the upstream test-task counts)."""
        return {entry.short: entry.avg_weight or 0 for entry in self.paper_columns()}

    def main_job(self) -> list[str]:
        """Short names of the envs ``mimesis-gym eval`` plays without ``--envs``, in table order."""
        return [entry.short for entry in self if entry.main_job]

    def get(self, short: str) -> EnvEntry | None:
        """The entry with this short name, or ``None``."""
        return next((entry for entry in self if entry.short == short), None)

    def summary_table(self, short: str) -> Literal["paper", "extra", "abcd"]:
        """Which summary table reports env ``short``: the paper's columns, the ABCD table, or the
        table of other envs (also every env outside this table)."""
        entry = self.get(short)
        if entry is not None and entry.summary == "abcd":
            return "abcd"
        return "paper" if entry is not None and entry.column is not None else "extra"

    def title(self, short: str) -> str:
        """The column title of ``short``; the short name itself for an env outside the table."""
        entry = self.get(short)
        return entry.title if entry is not None else short

    def find(self, name: str, *, listed_kind: str | None = None) -> EnvEntry:
        """The entry of an id or short name (case-insensitive), of UserRL's name of the env (its
        declared alias: ``upstream.gym``, e.g. ``TauGym``, case-insensitive), or of a
        Gymnasium-registered :class:`ConversationEnv` id outside the table (short name: the class's
        ``env_name``).

        ``module:name`` (as in ``gym.make("my_envs:examples/GuessNumber-v0")``) imports ``module``
        first, then resolves ``name``. Unless ``module`` is ``mimesis_gym`` itself, the entry returned
        is a copy whose ``id`` keeps the prefix, so the canonical name, the records' ``env_id`` and
        ``gym.make`` in a worker process import the module again.

        Raises ``ValueError`` naming the known envs (those of ``listed_kind`` when given, e.g.
        ``"conversation"`` where a view env would be refused anyway), or the module that failed to import.
        """
        module, _, bare = name.rpartition(":")
        if module:
            return self._find_in_module(module, bare, listed_kind)
        for entry in self:
            if name == entry.id or name.lower() == entry.short:
                return entry
        if name in gym.registry:
            outside = self._outside_entry(name)
            if outside is not None:
                return outside
        aliased = self._find_alias(name)  # last: it imports every env class of the table
        if aliased is not None:
            return aliased
        known = ", ".join(f"{entry.short} ({entry.id})" for entry in self if listed_kind in (None, entry.kind))
        raise ValueError(f"unknown env {name!r}; known: {known}")

    def canonical_names(self, names: Iterable[str]) -> list[str]:
        """``names`` with every env written one way and each env once (first-seen order).

        A table env is written as its short name (``TURTLE`` and ``mimesis/TurtleGym-v0`` become
        ``turtle``), a registered env outside the table as its id (its only name :meth:`find`
        resolves), an env named ``module:name`` as ``module:<its id>`` (the module registers it, in
        any process). A name that resolves to nothing is kept as given (stripped), for the caller
        to refuse with :meth:`find`'s message.
        """
        canonical: dict[str, None] = {}
        for name in (name.strip() for name in names):
            try:
                entry = self.find(name)
            except ValueError:
                canonical[name] = None
                continue
            canonical[entry.short if self._entries.get(entry.id) is entry else entry.id] = None
        return list(canonical)

    def _find_alias(self, name: str) -> EnvEntry | None:
        """The entry whose env declares ``name`` as UserRL's name of it (imports the env classes)."""
        for entry in self:
            upstream = getattr(entry.env_class(), "upstream", None)
            if upstream is not None and name.lower() == upstream.gym.lower():
                return entry
        return None

    def _find_in_module(self, module: str, name: str, listed_kind: str | None) -> EnvEntry:
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise ValueError(f"env {module}:{name}: cannot import module {module!r} ({error})") from None
        entry = self.find(name, listed_kind=listed_kind)
        if module == "mimesis_gym":  # the package registers the shipped envs in every process
            return entry
        return entry.model_copy(update={"id": f"{module}:{entry.id}"})

    def _outside_entry(self, env_id: str) -> EnvEntry | None:
        spec = gym.spec(env_id)
        creator: Any = spec.entry_point
        env_class = load_env_creator(creator) if isinstance(creator, str) else creator
        if not (isinstance(env_class, type) and issubclass(env_class, ConversationEnv)):
            return None
        short = env_class.env_name or env_id
        if not SHORT_NAME.match(short) or self.get(short) is not None:
            short = env_id
        entry_point = creator if isinstance(creator, str) else f"{env_class.__module__}:{env_class.__qualname__}"
        return EnvEntry(
            id=env_id, entry_point=entry_point, short=short, title=short, max_episode_steps=spec.max_episode_steps
        )
