"""Plug-ins: the entry points of one group, loaded once, lazily, failing loudly.

A third-party package adds envs, learners or agents through an entry-point group of its
``pyproject.toml`` (``[project.entry-points."mimesis_gym.envs"]``, ``"mimesis_gym.learners"``,
``"mimesis_gym.agents"``; docs/writing-an-env.md, "As a plug-in package"). The registry that owns a
group loads it at the first lookup or listing, not at import: a plug-in imports mimesis_gym itself.
A plug-in that fails to import or to register raises :class:`~mimesis_gym.core.errors.ConfigurationError`
naming the entry point, its distribution and the error — at that lookup and at every later one.
"""

from __future__ import annotations

import importlib.metadata
import threading
from collections.abc import Callable
from typing import Any

from mimesis_gym.core.errors import ConfigurationError

__all__ = ["EntryPointGroup"]


class EntryPointGroup:
    """The entry points of ``group``, each handed to ``register(name, loaded_object)`` once.

    :meth:`load` is idempotent and re-entrant (a plug-in's import may look a name up again); after a
    failure it raises the same :class:`ConfigurationError` every time, so a broken plug-in is never
    skipped silently.
    """

    def __init__(self, group: str, register: Callable[[str, Any], None]) -> None:
        self.group = group
        self._register = register
        self._lock = threading.RLock()
        self._started = False
        self._failure: ConfigurationError | None = None

    def load(self) -> None:
        """Register every entry point of the group (the first call); raise the failure of a broken one."""
        with self._lock:
            if self._failure is not None:
                raise self._failure
            if self._started:
                return
            self._started = True
            for entry_point in importlib.metadata.entry_points(group=self.group):
                try:
                    self._register(entry_point.name, entry_point.load())
                except Exception as error:
                    self._failure = ConfigurationError(_failure_message(self.group, entry_point, error))
                    raise self._failure from error


def _failure_message(group: str, entry_point: importlib.metadata.EntryPoint, error: BaseException) -> str:
    distribution = entry_point.dist.name if entry_point.dist else "an unknown distribution"
    return (
        f"plug-in {entry_point.name!r} = {entry_point.value!r} of entry-point group {group} (from {distribution}) "
        f"failed: {type(error).__name__}: {error}; fix or uninstall {distribution}"
    )
