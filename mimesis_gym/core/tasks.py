"""Task packs: splits of task records, task selection and upstream directory lookup.

What an env's pack must hold: docs/writing-an-env.md, "Checklist", item 1.

Loading is cached per process by each env's ``tasks.py`` (``functools.lru_cache`` on the loader),
so constructing and resetting an env costs microseconds, not a re-read of its data files.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.text import clean_json

__all__ = ["HasId", "TaskPack", "UpstreamDataError", "read_jsonl", "require_upstream_files", "resolve_upstream_dir"]

UPSTREAM_DATA_FIX = "`mimesis-gym data check` lists what is missing, `mimesis-gym data pull` clones the data"
"""How to get the upstream data, ending every :class:`UpstreamDataError`."""


class UpstreamDataError(ConfigurationError, FileNotFoundError):
    """A data folder lacks files an upstream task pack reads: the message names the folder, the
    expected files and the fix. A ``ConfigurationError`` (one line, exit 2 on the command line) and a
    ``FileNotFoundError``."""


class HasId(Protocol):
    @property
    def id(self) -> str: ...


TaskT = TypeVar("TaskT", bound=HasId)


class TaskPack(Generic[TaskT]):
    """Tasks grouped by split, each task findable by id from any split. One task object may sit in
    two splits (HumanReplay's ``train`` is its ``dev`` half); two tasks may not share an id.

    ``select`` implements the reset rule of docs/env-contract.md, "reset and step": ``task_id`` wins;
    otherwise a task is drawn from the split's pool (file order) with ``np_random.integers(len(pool))``.
    """

    def __init__(
        self,
        name: str,
        splits: Mapping[str, Sequence[TaskT]],
        *,
        lookup_keys: Callable[[TaskT], Sequence[str]] | None = None,
    ) -> None:
        """``lookup_keys`` adds case-insensitive lookups (e.g. titles, as UserRL allowed), built once."""
        self.name = name
        self.splits: dict[str, tuple[TaskT, ...]] = {split: tuple(tasks) for split, tasks in splits.items()}
        self.by_id: dict[str, TaskT] = {}
        for tasks in self.splits.values():
            for task in tasks:
                if task.id in self.by_id and self.by_id[task.id] is not task:
                    raise ValueError(f"pack {name!r}: duplicate task id {task.id!r}")
                self.by_id[task.id] = task
        self._by_key: dict[str, TaskT] = {}
        if lookup_keys is not None:
            for task in self.by_id.values():
                for key in lookup_keys(task):
                    self._by_key.setdefault(key.lower(), task)

    @classmethod
    def from_jsonl(
        cls,
        name: str,
        directory: Path,
        parse: Callable[[dict[str, Any]], TaskT],
        splits: Sequence[str] = ("train", "test", "demo"),
        **kwargs: Any,
    ) -> TaskPack[TaskT]:
        """A pack from ``<directory>/<split>.jsonl`` files, one record per line."""
        return cls(name, {split: read_jsonl(directory / f"{split}.jsonl", parse) for split in splits}, **kwargs)

    def __len__(self) -> int:
        return len(self.by_id)

    def __iter__(self) -> Iterator[TaskT]:
        return iter(self.by_id.values())

    def counts(self) -> dict[str, int]:
        return {split: len(tasks) for split, tasks in self.splits.items()}

    def get(self, task_id: str) -> TaskT:
        task = self.by_id.get(task_id) or self._by_key.get(task_id.lower())
        if task is None:
            raise ValueError(f"unknown task_id {task_id!r} in pack {self.name!r}")
        return task

    def pool(self, split: str) -> tuple[TaskT, ...]:
        if split not in self.splits:
            known = ", ".join(sorted(self.splits))
            raise ValueError(f"pack {self.name!r} has no split {split!r}; accepted: {known}")
        pool = self.splits[split]
        if not pool:
            raise ValueError(f"split {split!r} of pack {self.name!r} is empty")
        return pool

    def select(self, np_random: np.random.Generator, task_id: str | None, split: str) -> TaskT:
        if task_id is not None:
            return self.get(task_id)
        pool = self.pool(split)
        return pool[int(np_random.integers(len(pool)))]


def read_jsonl(path: Path, parse: Callable[[dict[str, Any]], TaskT] | None = None) -> list[Any]:
    """Read one JSON object per non-blank line; ``parse`` turns each into a record.

    Every string is made encodable first (:func:`~mimesis_gym.core.text.clean_json`): a lone
    surrogate escape in a data file becomes U+FFFD instead of failing a later write.
    """
    records: list[Any] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except ValueError as error:
                raise ValueError(f"{path}:{number}: not valid JSON ({error})") from None
            data = clean_json(data)
            records.append(parse(data) if parse else data)
    return records


def resolve_upstream_dir(data_dir: str | os.PathLike[str] | None, env_var: str) -> Path:
    """The upstream data root: ``data_dir`` if given, else ``$<env_var>``; an error names both."""
    chosen = data_dir if data_dir is not None else os.environ.get(env_var)
    if not chosen:
        raise ValueError(f"pack='upstream' needs the upstream data: pass data_dir=... or set ${env_var}")
    path = Path(chosen).expanduser()
    if not path.is_dir():
        source = "data_dir" if data_dir is not None else f"${env_var}"
        raise ValueError(f"{source} points to {str(path)!r}, which is not a directory")
    return path


def require_upstream_files(
    root: Path, files: Sequence[str | os.PathLike[str]], *, what: str, folder: str, variable: str, any_of: bool = False
) -> None:
    """:class:`UpstreamDataError` unless ``root`` holds every one of ``files`` (paths relative to it;
    with ``any_of``, at least one).

    ``what`` names the reader (``"TurtleGym (pack='upstream')"``), ``folder`` what ``root`` should be
    (``"the root of a UserRL checkout"``) and ``variable`` the environment variable that may name it
    instead of ``data_dir``.
    """
    names = [str(name) for name in files]
    missing = [name for name in names if not (root / name).is_file()]
    if not missing or (any_of and len(missing) < len(names)):
        return
    if any_of or len(missing) == len(names):
        found = f"holds none of them (expected {'one of ' if any_of else ''}{_some(names)})"
    else:
        found = f"lacks {_some(missing)}"
    raise UpstreamDataError(
        f"{what} reads its files under {root}, which {found}; pass {folder} as data_dir (eval: --data-dir) or in "
        f"${variable}; {UPSTREAM_DATA_FIX}"
    )


def _some(names: Sequence[str]) -> str:
    return ", ".join(names) if len(names) <= 3 else f"{', '.join(names[:3])} and {len(names) - 3} more"
