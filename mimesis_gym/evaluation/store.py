"""The append-only results store: ``episodes.jsonl`` written crash-safely.

Each record is serialised with ``sort_keys``, written as one line in a single ``write``, flushed and
fsynced (in a thread, off the event loop). On resume a torn last line (a kill mid-write) is cut off
with a WARNING; an invalid line anywhere else is an error.

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
from pathlib import Path
from typing import TypeVar

from mimesis_gym.core.redact import redact, secret_values
from mimesis_gym.core.text import clean_json, clean_text, map_strings
from mimesis_gym.evaluation.records import EpisodeRecord

__all__ = ["FINISHED_STATUSES", "ResultsStore", "parse_record", "safe_strings", "serialise_record"]

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


class ResultsStore:
    """``<out>/episodes.jsonl``: append records, read them back, repair a torn tail."""

    def __init__(self, path: Path) -> None:
        self.path = path
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
        """Every record in file order; ``ValueError`` naming the line for an invalid one."""
        if not self.path.exists():
            return []
        records = []
        with self.path.open(encoding="utf-8", errors="replace") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                try:
                    records.append(parse_record(line))
                except ValueError as error:
                    raise ValueError(f"{self.path}:{number}: invalid record ({error})") from None
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
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())

    async def append(self, record: EpisodeRecord) -> None:
        """Append one record durably (the single writer; safe for concurrent episodes)."""
        line = serialise_record(record) + "\n"
        async with self._lock:
            await asyncio.to_thread(self._append_sync, line)
