"""A note the CSD coach wrote: cleaning, the length cut and the privacy leak filter.

See docs/algorithms.md, "Notes and the leak filter".

A note is stripped; empty, or starting with ``NONE`` (any case), means no note; it is cut to
``max_note_chars``. The leak filter drops a note that contains a number, a quoted string or a
capitalised word (not sentence-initial) that occurs in the privileged material but nowhere in the
public history (compared case-insensitively): the coach may say what to ask, never the answer.
"""

from __future__ import annotations

import re

__all__ = ["MAX_NOTE_CHARS", "clean_note", "leaked_items"]

MAX_NOTE_CHARS = 600
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_QUOTED = re.compile(r"[\"“]([^\"”]+)[\"”]|'([^']+)'")
_WORD = re.compile(r"[A-Za-z][\w'-]*")
_SENTENCE_END = re.compile(r"[.!?]\s*$")


def _candidates(note: str) -> list[str]:
    items = _NUMBER.findall(note)
    items += [a or b for a, b in _QUOTED.findall(note)]
    for match in _WORD.finditer(note):
        word = match.group(0)
        before = note[: match.start()].rstrip()
        sentence_initial = not before or bool(_SENTENCE_END.search(before))
        if word[0].isupper() and not sentence_initial:
            items.append(word)
    return items


def leaked_items(note: str, privileged: str, public: str) -> list[str]:
    """Items of ``note`` found in ``privileged`` but nowhere in ``public`` (case-insensitive)."""
    private, shown = privileged.lower(), public.lower()
    return [item for item in _candidates(note) if item.lower() in private and item.lower() not in shown]


def clean_note(
    note: str | None,
    *,
    privileged: str = "",
    public: str = "",
    max_chars: int = MAX_NOTE_CHARS,
    leak_filter: bool = True,
) -> str | None:
    """The note to train with, or ``None`` (no note, a ``NONE`` answer, or a leak)."""
    if note is None:
        return None
    text = note.strip()
    if not text or text.upper().startswith("NONE"):
        return None
    text = text[:max_chars]
    if leak_filter and leaked_items(text, privileged, public):
        return None
    return text
