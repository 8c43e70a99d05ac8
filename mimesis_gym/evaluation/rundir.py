"""A run directory's guards: one process at a time, and a resume that continues exactly its own run.

* :class:`RunLock` takes an advisory ``flock`` on the run directory itself for the life of an
  ``eval``; a second ``eval`` or ``--resume`` on the same directory fails at once instead of
  appending duplicate records. The lock is held on an open descriptor of the directory, so no file
  can be deleted from under it, and it dies with its process, so a killed run never leaves it stale.
* :func:`config_fingerprint` hashes the canonical JSON of a run's config; ``run.json`` stores it,
  and :func:`stored_config` refuses a ``run.json`` whose config no longer matches it (edited by
  hand), because the records already on disk were produced under the original one.
* :func:`check_resume_overrides` refuses command-line settings that would change what a resumed
  run plays (its agents, envs, turn cap, …); only how fast it runs may change.
* :func:`write_text_atomic` writes a run's files (``run.json``, the summaries, ``report.html``)
  whole or not at all, leaving no ``*.tmp`` behind; :class:`DiskFullError` is how a run stopped by a
  full disk (``ENOSPC``) says so.
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from contextlib import suppress
from pathlib import Path
from typing import Any

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.core.errors import ConfigurationError, MimesisGymError
from mimesis_gym.core.redact import has_redacted_url_credential
from mimesis_gym.core.text import map_strings
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.store import safe_strings

__all__ = [
    "RESUME_ADJUSTABLE",
    "DiskFullError",
    "RunInUseError",
    "RunLock",
    "check_credentials_given",
    "check_resume_overrides",
    "config_fingerprint",
    "is_disk_full",
    "stored_config",
    "write_text_atomic",
]

RESUME_ADJUSTABLE = frozenset(
    {"concurrency", "agent_concurrency", "user_concurrency", "workers", "ray_address", "step_timeout", "user_failures"}
)
"""Settings a ``--resume`` may change: the pace, and which scoring mode heads the summary (both modes are
computed from the same records); never what is played."""


class RunInUseError(MimesisGymError):
    """Another process holds the run directory."""


class DiskFullError(MimesisGymError):
    """A run stopped because a write into its directory found the disk full (``ENOSPC``).

    The message is one line: what failed, the path, what became of ``run.json`` and how to go on.
    ``path`` is the file whose write failed (``None`` when unknown) and ``marked`` whether ``run.json``
    could still be set to ``interrupted``.
    """

    def __init__(self, message: str, *, path: str | None, marked: bool) -> None:
        super().__init__(message)
        self.path, self.marked = path, marked


def is_disk_full(error: BaseException) -> bool:
    """Whether ``error`` is an ``OSError`` with ``errno.ENOSPC`` (no space left on the device)."""
    return isinstance(error, OSError) and error.errno == errno.ENOSPC


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all: into ``<path>.tmp``, then renamed over ``path``.

    On any failure the temporary file is removed and the error propagates; an ``OSError`` without a
    file name (a failed ``write`` of an open file) gets ``path`` as its ``filename``.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(text, encoding="utf-8", newline="")
        os.replace(tmp, path)
    except BaseException as error:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)
        if isinstance(error, OSError) and error.filename is None:
            error.filename = str(path)
        raise


class RunLock:
    """An exclusive, non-blocking ``flock`` on the run directory ``out`` (context manager).

    The lock is taken on an open descriptor of the directory, not on a file inside it: deleting
    ``<out>/.lock`` (or anything else) during a run cannot release it, and the kernel drops it when
    the holder exits, however it exits. ``<out>/.lock`` is recreated to hold the holder's pid, for a
    person to read. On a file system that cannot lock a directory (NFS refuses ``flock`` on a
    descriptor not open for writing) the lock falls back to ``<out>/.lock`` itself, which a
    deletion during the run does release.
    """

    def __init__(self, out: Path) -> None:
        self.out = out
        self.path = out / ".lock"
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock; :class:`RunInUseError` at once when another process holds it."""
        try:
            self._fd = self._locked(self.out, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        except OSError as error:  # RunInUseError is not an OSError
            if error.errno not in DIRECTORY_LOCK_UNSUPPORTED:
                raise
            self._fd = self._locked(self.path, os.O_RDWR | os.O_CREAT)
        self._note_pid()

    def _locked(self, path: Path, flags: int) -> int:
        """A descriptor of ``path`` holding the exclusive lock (closed again when the lock is refused)."""
        fd = os.open(path, flags, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            os.close(fd)
            if error.errno in (errno.EAGAIN, errno.EACCES):
                raise RunInUseError(
                    f"{self.out} is in use by another mimesis-gym process; wait for it to finish or use another --out"
                ) from None
            raise
        return fd

    def _note_pid(self) -> None:
        """Write this process's pid to ``<out>/.lock`` (recreated if it was deleted); informational, so
        a failure (a full disk) is ignored."""
        try:
            note = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
        except OSError:
            return
        try:
            os.ftruncate(note, 0)
            os.write(note, f"{os.getpid()}\n".encode())
        except OSError:
            pass
        finally:
            os.close(note)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


DIRECTORY_LOCK_UNSUPPORTED = frozenset({errno.EBADF, errno.EINVAL, errno.ENOLCK, errno.EOPNOTSUPP})
"""``flock`` errors of a file system that cannot lock a directory descriptor (NFS: ``EBADF``)."""


def config_fingerprint(config: Mapping[str, Any]) -> str:
    """SHA-256 of the config's canonical JSON (sorted keys, no whitespace)."""
    canonical = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def stored_config(out: Path) -> dict[str, Any]:
    """The config in ``<out>/run.json``; :class:`ConfigurationError` when missing, unreadable or edited.

    Its ``envs`` come back written the way :class:`~mimesis_gym.evaluation.plan.EvalConfig` writes
    them (:meth:`~mimesis_gym.envs.table.EnvTable.canonical_names`), so a run stored with an env's id
    or a repeated env resumes, and compares with today's names, unchanged; a run stored before
    ``user_behaviors`` existed played control only, and says so.
    """
    path = out / "run.json"
    if not path.is_file():
        raise ConfigurationError(f"--resume needs --out pointing at an earlier run; {path} does not exist")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
        config = meta["config"]
    except (ValueError, KeyError, TypeError) as error:
        raise ConfigurationError(f"{path} is not a run.json this tool wrote ({type(error).__name__})") from None
    stored = meta.get("config_fingerprint")
    if stored is not None and stored != config_fingerprint(config):
        raise ConfigurationError(
            f"{path}: the config was edited after the run started (its fingerprint no longer matches); the "
            "records on disk were made under the original config: start a new run with another --out"
        )
    if isinstance(config, dict) and isinstance(config.get("envs"), list):
        config = {**config, "envs": ENV_TABLE.canonical_names(map(str, config["envs"]))}
    if isinstance(config, dict) and "user_behaviors" not in config:
        config = {**config, "user_behaviors": [CONTROL]}
    return config


def check_resume_overrides(stored: Mapping[str, Any], given: Mapping[str, Any]) -> dict[str, Any]:
    """``stored`` updated with the adjustable settings of ``given``; refuse any other change.

    ``given`` holds the settings passed on the command line of the resume (``None`` = not given).
    ``stored`` is redacted (``run.json`` keeps no key and no credential inside a URL): a given value
    equal to its stored one once redacted is the same setting, and replaces it, credential included.
    """
    given = {key: value for key, value in given.items() if value is not None}
    changed = {
        key: value
        for key, value in given.items()
        if key not in RESUME_ADJUSTABLE and stored.get(key) != safe_strings(value)
    }
    if changed:
        details = "; ".join(f"{key}: stored {stored.get(key)!r}, given {value!r}" for key, value in changed.items())
        raise ConfigurationError(
            f"--resume continues the stored run and cannot change what it plays ({details}); drop those flags "
            "or start a new run with another --out"
        )
    return {**stored, **given}


def check_credentials_given(config: Mapping[str, Any]) -> None:
    """:class:`ConfigurationError` when a resumed ``config`` still holds a URL whose credential ``run.json``
    did not keep (``http://***@host``) and the resume's command line did not give again."""
    lost: list[str] = []

    def note(text: str) -> str:
        if has_redacted_url_credential(text):
            lost.append(text)
        return text

    map_strings(dict(config), note)
    if lost:
        raise ConfigurationError(
            f"--resume: run.json keeps no credential from a URL, and {lost[0]!r} needs one: pass that setting again "
            "as the run was started, its URL with the credential (--users, --agent or --judge)"
        )
