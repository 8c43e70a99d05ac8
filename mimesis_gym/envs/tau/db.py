"""TauGym's database model: canonical form, digests and the copy-on-write episode view (docs/envs/tau.md, "Rewards").

A domain database is a dict of three top-level tables, each a dict ``key -> record`` of plain JSON
values exactly as ``json.load`` gives them. :class:`Database` holds the pristine tables of one
domain, shared by every episode of the process and **never mutated**. :class:`EpisodeDB` is one
episode's view of it: reads fall through to the pristine tables, and a tool's first write to a
record deep-copies that record into the episode's overlay (keyed by ``(table, key)``).

Database equality is equality of canonical strings, never Python ``==`` (``91`` and ``91.0``
differ): ``canonical_text(v) == str(canon(v))`` and the digest is the SHA-256 of the canonical
string of the whole database. The pristine records' canonical strings are computed once per
process and reused, so a full digest costs one SHA-256 pass, not a re-serialisation.
"""

from __future__ import annotations

import bisect
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["Database", "EpisodeDB", "canon", "canonical_text", "copy_json", "digest_of"]

MEMO_SIZE = 512
"""Digests of touched-record states remembered per database before the memo is cleared."""


def canon(value: Any) -> Any:
    """A dict becomes the tuple of ``(key, canon(value))`` sorted by key, a list the tuple of its
    canonical elements; anything else is unchanged."""
    if isinstance(value, dict):
        return tuple((key, canon(item)) for key, item in sorted(value.items()))
    if isinstance(value, list):
        return tuple(canon(item) for item in value)
    return value


def canonical_text(value: Any) -> str:
    """``str(canon(value))``: the text the digest is taken of."""
    return str(canon(value))


def digest_of(tables: dict[str, dict[str, Any]]) -> str:
    """The digest computed directly (slow on the upstream tables; tests compare against it)."""
    return hashlib.sha256(canonical_text(tables).encode("utf-8")).hexdigest()


def copy_json(value: Any) -> Any:
    """A deep copy of plain JSON data (dicts, lists, scalars), several times faster than ``deepcopy``."""
    if isinstance(value, dict):
        return {key: copy_json(item) if isinstance(item, (dict, list)) else item for key, item in value.items()}
    if isinstance(value, list):
        return [copy_json(item) if isinstance(item, (dict, list)) else item for item in value]
    return value


def _tuple_text(pieces: list[str]) -> str:
    """The ``str`` of a tuple whose elements print as ``pieces`` (a 1-tuple keeps its comma)."""
    if len(pieces) == 1:
        return f"({pieces[0]},)"
    return "(" + ", ".join(pieces) + ")"


class Database:
    """The pristine tables of one domain (never mutated) and their cached canonical strings.

    ``source`` names how to load the database again; pickling stores only that (``restore``
    re-opens the per-process cache), so envs pickle cheaply.
    """

    def __init__(
        self,
        domain: str,
        tables: dict[str, dict[str, Any]],
        *,
        source: tuple[Any, ...] = (),
        restore: Callable[..., Database] | None = None,
    ) -> None:
        self.domain = domain
        self.tables = tables
        self.table_names: tuple[str, ...] = tuple(sorted(tables))
        self.source = source
        self._restore = restore
        self._record_texts: dict[str, dict[str, str]] = {name: {} for name in self.table_names}
        self._sorted_keys: dict[str, list[str]] = {}
        self._positions: dict[str, dict[str, int]] = {}
        self._pieces: dict[str, list[str]] = {}
        self._table_bytes: dict[str, tuple[bytes, list[tuple[int, int]]]] = {}
        self._memo: dict[tuple[tuple[tuple[str, str], str], ...], str] = {}
        self._digest: str | None = None

    def __reduce__(self) -> tuple[Any, ...]:
        if self._restore is None:
            return (Database, (self.domain, self.tables))
        return (self._restore, self.source)

    def record_text(self, table: str, key: str) -> str:
        """Canonical string of a pristine record (computed once, then cached)."""
        texts = self._record_texts[table]
        text = texts.get(key)
        if text is None:
            text = texts[key] = canonical_text(self.tables[table][key])
        return text

    def sorted_keys(self, table: str) -> list[str]:
        keys = self._sorted_keys.get(table)
        if keys is None:
            keys = self._sorted_keys[table] = sorted(self.tables[table])
            self._positions[table] = {key: index for index, key in enumerate(keys)}
        return keys

    def pieces(self, table: str) -> list[str]:
        """``"(<key repr>, <record text>)"`` for every pristine record, in key order."""
        pieces = self._pieces.get(table)
        if pieces is None:
            pieces = self._pieces[table] = [
                f"({key!r}, {self.record_text(table, key)})" for key in self.sorted_keys(table)
            ]
        return pieces

    def table_bytes(self, table: str) -> tuple[bytes, list[tuple[int, int]]]:
        """The encoded digest entry ``(<table repr>, <table text>)`` and the byte span of each piece."""
        cached = self._table_bytes.get(table)
        if cached is None:
            pieces = self.pieces(table)
            chunks = [f"({table!r}, (".encode()]
            spans = []
            position = len(chunks[0])
            for index, piece in enumerate(pieces):
                if index:
                    chunks.append(b", ")
                    position += 2
                encoded = piece.encode("utf-8")
                spans.append((position, position + len(encoded)))
                chunks.append(encoded)
                position += len(encoded)
            chunks.append(b",))" if len(pieces) == 1 else b"))")
            cached = self._table_bytes[table] = (b"".join(chunks), spans)
        return cached

    def position(self, table: str, key: str) -> int | None:
        self.sorted_keys(table)
        return self._positions[table].get(key)

    @property
    def digest(self) -> str:
        """Digest of the pristine tables."""
        if self._digest is None:
            sha = hashlib.sha256(b"(")
            for index, table in enumerate(self.table_names):
                if index:
                    sha.update(b", ")
                sha.update(self.table_bytes(table)[0])
            sha.update(b")")
            self._digest = sha.hexdigest()
        return self._digest

    def remember(self, touched: tuple[tuple[tuple[str, str], str], ...], digest: str) -> None:
        """Memoise the digest of a state (gold states are reached again and again)."""
        if len(self._memo) >= MEMO_SIZE:
            self._memo.clear()
        self._memo[touched] = digest

    def recall(self, touched: tuple[tuple[tuple[str, str], str], ...]) -> str | None:
        return self._memo.get(touched)


_MISSING = object()


class EpisodeDB:
    """One episode's copy-on-write view of a :class:`Database`.

    Tools read with :meth:`get` / :meth:`items` and obtain a mutable record with :meth:`write`
    (deep-copied into the overlay on the first write) or add one with :meth:`insert`. Records
    returned by :meth:`get` may be pristine: never mutate them.
    """

    __slots__ = ("added", "base", "overlay")

    def __init__(self, base: Database) -> None:
        self.base = base
        self.overlay: dict[tuple[str, str], Any] = {}
        self.added: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ reads

    def get(self, table: str, key: str) -> Any:
        """The current record, or ``None`` when the table has no such key."""
        record = self.overlay.get((table, key), _MISSING)
        if record is _MISSING:
            return self.base.tables[table].get(key)
        return record

    def has(self, table: str, key: str) -> bool:
        return (table, key) in self.overlay or key in self.base.tables[table]

    def items(self, table: str) -> Iterator[tuple[str, Any]]:
        """``(key, record)`` in table order: the pristine keys, then keys added in this episode."""
        overlay = self.overlay
        if not overlay:
            yield from self.base.tables[table].items()
            return
        for key, record in self.base.tables[table].items():
            yield key, overlay.get((table, key), record)
        for key in self.added.get(table, ()):
            yield key, overlay[(table, key)]

    # ------------------------------------------------------------------ writes

    def write(self, table: str, key: str) -> Any:
        """The record, made private to this episode on its first write; ``KeyError`` if absent."""
        record = self.overlay.get((table, key), _MISSING)
        if record is _MISSING:
            record = self.overlay[(table, key)] = copy_json(self.base.tables[table][key])
        return record

    def insert(self, table: str, key: str, record: Any) -> None:
        """Store ``record`` under ``key`` (a new key goes last in table order; an existing one is
        overwritten in place)."""
        if (table, key) not in self.overlay and key not in self.base.tables[table]:
            self.added.setdefault(table, []).append(key)
        self.overlay[(table, key)] = record

    # ------------------------------------------------------------------ comparison

    def record_text(self, table: str, key: str) -> str | None:
        """Canonical string of the current record, ``None`` when absent."""
        record = self.overlay.get((table, key), _MISSING)
        if record is not _MISSING:
            return canonical_text(record)
        if key in self.base.tables[table]:
            return self.base.record_text(table, key)
        return None

    def touched_texts(self) -> dict[tuple[str, str], str]:
        """Canonical strings of the records this episode wrote or added (a snapshot of its changes)."""
        return {slot: canonical_text(record) for slot, record in self.overlay.items()}

    def same_state(self, other: EpisodeDB) -> bool:
        """Whether both views hold the same database: only records touched by either are compared
        (the others are the shared pristine ones), by canonical string."""
        if other.base is not self.base:
            raise ValueError("cannot compare episode databases over different pristine tables")
        return self.matches(other.touched_texts())

    def matches(self, touched: dict[tuple[str, str], str]) -> bool:
        """Whether this view equals the state whose touched records are ``touched`` (another view of
        the same pristine tables, from :meth:`touched_texts`)."""
        for table, key in self.overlay.keys() | touched.keys():
            theirs = touched.get((table, key))
            if theirs is None and key in self.base.tables[table]:
                theirs = self.base.record_text(table, key)
            if self.record_text(table, key) != theirs:
                return False
        return True

    def digest(self) -> str:
        """SHA-256 of ``str(canon(db))`` for the current state.

        Built from the pristine tables' cached bytes with only the touched records re-serialised,
        and memoised per state on the :class:`Database`.
        """
        base = self.base
        if not self.overlay:
            return base.digest
        touched = self.touched_texts()
        memo_key = tuple(sorted(touched.items()))
        known = base.recall(memo_key)
        if known is not None:
            return known
        changed: dict[str, list[str]] = {}
        for table, key in self.overlay:
            changed.setdefault(table, []).append(key)
        sha = hashlib.sha256(b"(")
        for index, table in enumerate(base.table_names):
            if index:
                sha.update(b", ")
            keys = changed.get(table)
            data, spans = base.table_bytes(table)
            if not keys:
                sha.update(data)
            elif len(spans) < 2:
                sha.update(self._table_entry_text(table, keys, touched).encode("utf-8"))
            else:
                self._feed_changed_table(sha, table, keys, touched, data, spans)
        sha.update(b")")
        digest = sha.hexdigest()
        base.remember(memo_key, digest)
        return digest

    def _feed_changed_table(
        self,
        sha: Any,
        table: str,
        keys: list[str],
        touched: dict[tuple[str, str], str],
        data: bytes,
        spans: list[tuple[int, int]],
    ) -> None:
        """Hash a table of at least two pristine records: unchanged byte ranges straight from the
        cache, replaced and inserted pieces in key order."""
        base = self.base
        events = []
        for key in keys:
            piece = f"({key!r}, {touched[(table, key)]})".encode()
            position = base.position(table, key)
            if position is None:  # a new key goes before the first pristine key greater than it
                events.append((bisect.bisect_left(base.sorted_keys(table), key), 0, key, piece))
            else:
                events.append((position, 1, key, piece))
        events.sort(key=lambda event: event[:3])
        view = memoryview(data)
        cursor = 0
        last = len(spans) - 1
        for position, replaces, _, piece in events:
            if replaces:
                start, end = spans[position]
                sha.update(view[cursor:start])
                sha.update(piece)
                cursor = end
            elif position <= last:
                start = spans[position][0]
                sha.update(view[cursor:start])
                sha.update(piece + b", ")
                cursor = start
            else:
                end = spans[last][1]
                sha.update(view[cursor:end])
                sha.update(b", " + piece)
                cursor = end
        sha.update(view[cursor:])

    def _table_entry_text(self, table: str, keys: list[str], touched: dict[tuple[str, str], str]) -> str:
        """``(<table repr>, <table text>)`` built as strings (tables of fewer than two records)."""
        base = self.base
        pieces = list(base.pieces(table))
        new_keys = []
        for key in keys:
            position = base.position(table, key)
            if position is None:
                new_keys.append(key)
            else:
                pieces[position] = f"({key!r}, {touched[(table, key)]})"
        if new_keys:  # after the replacements, which use pristine positions
            sorted_keys = list(base.sorted_keys(table))
            for key in sorted(new_keys):
                at = bisect.bisect_left(sorted_keys, key)
                sorted_keys.insert(at, key)
                pieces.insert(at, f"({key!r}, {touched[(table, key)]})")
        return f"({table!r}, {_tuple_text(pieces)})"
