"""ThoughtTrace: real human–AI chats annotated by their users (Apache-2.0 / CC-BY-4.0 sample).

One JSON object a line: ``id``, ``messages`` of ``{"type": "user" | "assistant", "content", ...}``,
and the user's own ``task_summary`` and ``task_expectation``. Each user message carries the user's
``reasons`` for writing it (→ :attr:`HumanTurn.reason`), each assistant reply the user's
``reactions`` to it (→ :attr:`HumanTurn.reaction`); several are joined by newlines. The goal is the
summary followed by the expectation, both in the user's words (``goal_kind="description"``).
"""

from __future__ import annotations

from pathlib import Path

from mimesis_gym.corpora.assemble import (
    CorpusLoad,
    Malformed,
    Message,
    Parsed,
    assemble_lines,
    join_texts,
    text_or_none,
)

__all__ = ["SOURCE", "load"]

SOURCE = "thoughttrace"
_ROLES = ("user", "assistant")
_NOTES = {"user": "reasons", "assistant": "reactions"}


def load(path: Path) -> CorpusLoad:
    """The conversations of ``ThoughtTrace_examples.jsonl`` (or the full release, same shape) at ``path``.

    A line that is not a JSON object with a string ``id`` and a list of ``messages`` whose ``type``
    is ``user``/``assistant`` counts as ``"malformed line"``."""
    return assemble_lines(SOURCE, path, _parse)


def _parse(record: object, number: int) -> Parsed:
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise Malformed("no id")
    raw = record.get("messages")
    if not isinstance(raw, list) or not all(isinstance(item, dict) and item.get("type") in _ROLES for item in raw):
        raise Malformed("messages is not a list of user/assistant messages")
    messages = []
    for item in raw:
        role = item["type"]
        notes = _notes(item.get(_NOTES[role]))
        messages.append(Message(role, item.get("content"), *((notes, None) if role == "user" else (None, notes))))
    goal = join_texts(text_or_none(record.get(key)) for key in ("task_summary", "task_expectation"))
    return record["id"], messages, goal


def _notes(entries: object) -> str | None:
    """The ``content`` of each reason or reaction entry, joined by newlines."""
    if not isinstance(entries, list):
        return None
    return join_texts(text_or_none(entry.get("content")) for entry in entries if isinstance(entry, dict))
