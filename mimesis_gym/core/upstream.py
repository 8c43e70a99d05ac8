"""An env's own declaration of what it reads from a UserRL checkout (``pack="upstream"``).

Each env class that reads UserRL's files sets ``ConversationEnv.upstream`` to a
:class:`UserRLUpstream`; ``mimesis-gym data check`` (:mod:`mimesis_gym.evaluation.upstream_data`)
walks the env table and checks every declaration, so no list of envs' files lives outside the envs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["UpstreamFile", "UserRLUpstream"]


@dataclass(frozen=True, slots=True)
class UpstreamFile:
    """One file an env reads from the checkout besides its task files.

    ``purpose`` (may be empty) says what the file is for when it is absent; an optional file
    (``needed=False``) only adds data; ``full_clone`` says that archive downloads lack it.
    """

    path: str
    purpose: str = ""
    needed: bool = True
    full_clone: bool = False


@dataclass(frozen=True, slots=True)
class UserRLUpstream:
    """What one env reads from UserRL, and what its loader must find there.

    ``gym`` is UserRL's name of the env (its folder ``gyms/<gym>``; the label of the check's lines).
    ``task_files`` are the files ``load`` reads (a UserRL checkout's root → the task pack); none
    when the env's tasks come from elsewhere. ``counts`` are the task counts per split the paper
    used (``None``: not compared). ``unplayable`` maps a loaded pack to the absent files that leave
    tasks loaded but unplayable (file → how many tasks). ``files`` are the other files it reads.
    """

    gym: str
    task_files: tuple[str, ...] = ()
    load: Callable[[str], Any] | None = None
    counts: Mapping[str, int] | None = None
    unplayable: Callable[[Any], Mapping[str, int]] | None = None
    files: tuple[UpstreamFile, ...] = field(default=())
