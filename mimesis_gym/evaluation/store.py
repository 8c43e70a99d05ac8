"""The append-only results store: ``episodes.jsonl`` written crash-safely.

Each record is serialised with ``sort_keys``, written as one line in a single ``write``, flushed and
fsynced (in a thread, off the event loop). On resume a torn last line (a kill mid-write) is cut off
with a WARNING; an invalid line anywhere else is a :class:`CorruptRecordError` naming the file and
line and the two repairs (delete the line, or read with ``skip_corrupt=True``, the commands'
``--skip-corrupt``, which skips such lines and counts them in :attr:`ResultsStore.skipped`).

The store is the last line of defence for what a record may hold (:func:`serialise_record`): every
string is made encodable (a lone surrogate becomes U+FFFD), and every configured API key value and
every credential inside a URL (``http://***@host``) is redacted, so writing a record never fails on
its text and never writes a key. Reading tolerates
invalid UTF-8 bytes and lone-surrogate escapes written by other tools (both become U+FFFD).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import TypeVar

from pydantic import ValidationError

from mimesis_gym.core.errors import MimesisGymError, validation_problems
from mimesis_gym.core.redact import redact, secret_values
from mimesis_gym.core.text import clean_json, clean_text, map_strings
from mimesis_gym.evaluation.records import EpisodeRecord

__all__ = [
    "FINISHED_STATUSES",
    "CorruptRecordError",
    "ResultsStore",
    "parse_record",
    "safe_strings",
    "serialise_record",
    "skipped_note",
]

logger = logging.getLogger(__name__)

FINISHED_STATUSES = frozenset({"ok", "user_failure"})

T = TypeVar("T")


def safe_strings(data: T) -> T:
    """A copy of the JSON-like ``data`` whose every string encodes as UTF-8 and holds no configured key value
    and no credential inside a URL (also what ``run.json`` and ``users_report.json`` keep)."""
    values = secret_values()

    def safe(text: str) -> str:
        return redact(clean_text(text), tokens=False, values=values)

    return map_strings(data, safe)


def serialise_record(record: EpisodeRecord) -> str:
    """``record`` as one JSON line (sorted keys, UTF-8 text, no newline), always encodable, keys redacted."""
    return json.dumps(safe_strings(record.model_dump(mode="json")), ensure_ascii=False, sort_keys=True)


def parse_record(line: str) -> EpisodeRecord:
    """One record from its JSON line; lone-surrogate escapes become U+FFFD. ``ValueError`` if invalid."""
    try:
        return EpisodeRecord.model_validate_json(line)
    except ValueError as error:  # pydantic's parser rejects lone-surrogate escapes; json does not
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            raise error from None
        return EpisodeRecord.model_validate(clean_json(data))


class CorruptRecordError(MimesisGymError, ValueError):
    """A line of ``episodes.jsonl`` (not a torn last one) holds no valid record; the message names the
    file, the line and the repairs."""

    def __init__(self, path: Path, line: int, error: ValueError) -> None:
        super().__init__(
            f"{path}:{line}: not an episode record ({_what_is_wrong(error)}); delete that line (`eval --resume` "
            "then plays its episode again) or pass --skip-corrupt (eval --resume, report, collect) to skip such lines"
        )
        self.path, self.line = path, line


def _what_is_wrong(error: ValueError) -> str:
    """A short reason why a line is not a record: not JSON, the missing fields, or pydantic's problems."""
    if not isinstance(error, ValidationError):
        return str(error)[:200]
    items = error.errors()
    if any(item["type"] == "json_invalid" for item in items):
        return "not valid JSON"
    missing = [".".join(map(str, item["loc"])) for item in items if item["type"] == "missing"]
    if missing and len(missing) == len(items):
        more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
        return f"missing {', '.join(missing[:4])}{more}"
    problems = validation_problems(error)
    return problems if len(problems) <= 200 else problems[:199] + "…"


def skipped_note(path: Path, lines: Sequence[int]) -> str:
    """One line reporting the corrupt ``lines`` of ``path`` that a read skipped."""
    shown = ", ".join(map(str, lines[:10])) + (", …" if len(lines) > 10 else "")
    return f"skipped {len(lines)} corrupt line(s) of {path} (line {shown})"


class ResultsStore:
    """``<out>/episodes.jsonl``: append records, read them back, repair a torn tail.

    With ``skip_corrupt``, reading skips lines that hold no valid record instead of raising
    :class:`CorruptRecordError`; :attr:`skipped` holds their line numbers after each read.
    """

    def __init__(self, path: Path, *, skip_corrupt: bool = False) -> None:
        self.path = path
        self.skip_corrupt = skip_corrupt
        self.skipped: tuple[int, ...] = ()
        self._lock = asyncio.Lock()

    def repair(self) -> bool:
        """Truncate a final line that lacks its newline or is not valid JSON; True if it cut."""
        if not self.path.exists():
            return False
        data = self.path.read_bytes()
        if not data:
            return False
        cut = len(data)
        if not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
        else:
            last_start = data.rfind(b"\n", 0, len(data) - 1) + 1
            try:
                json.loads(data[last_start:].decode("utf-8", "replace"))
            except ValueError:
                cut = last_start
        if cut == len(data):
            return False
        logger.warning("episodes.jsonl: cutting a torn last line (%d bytes)", len(data) - cut)
        with self.path.open("r+b") as handle:
            handle.truncate(cut)
            handle.flush()
            os.fsync(handle.fileno())
        return True

    def read(self) -> list[EpisodeRecord]:
        """Every record in file order; :class:`CorruptRecordError` naming the line for an invalid one
        (skipped, and counted in :attr:`skipped`, with ``skip_corrupt``)."""
        if not self.path.exists():
            return []
        records = []
        skipped = []
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    records.append(parse_record(line))
                except ValueError as error:
                    if not self.skip_corrupt:
                        raise CorruptRecordError(self.path, number, error) from None
                    skipped.append(number)
        self.skipped = tuple(skipped)
        return records

    def latest(self) -> dict[str, EpisodeRecord]:
        """The last record of every key."""
        return {record.key: record for record in self.read()}

    def finished_keys(self, retry_errors: bool = True) -> set[str]:
        latest = self.latest()
        if retry_errors:
            return {key for key, record in latest.items() if record.status in FINISHED_STATUSES}
        return set(latest)

    def _append_sync(self, line: str) -> None:
        """Append ``line`` and fsync it; on failure (a full disk) cut the file back to its old end, so no
        torn record stays behind, and raise the ``OSError`` with this file's path as ``filename``."""
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
        try:
            end = os.fstat(fd).st_size
            try:
                rest = memoryview(line.encode("utf-8"))
                while rest:  # one write unless the disk fills up part-way
                    rest = rest[os.write(fd, rest) :]
                os.fsync(fd)
            except OSError as error:
                with suppress(OSError):
                    os.ftruncate(fd, end)
                if error.filename is None:
                    error.filename = str(self.path)
                raise
        finally:
            os.close(fd)

    async def append(self, record: EpisodeRecord) -> None:
        """Append one record durably (the single writer; safe for concurrent episodes)."""
        line = serialise_record(record) + "\n"
        async with self._lock:
            await asyncio.to_thread(self._append_sync, line)
