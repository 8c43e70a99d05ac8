"""Text that can always be encoded: the sanitiser applied wherever model, user or file text enters.

A Python ``str`` can hold code points that UTF-8 cannot encode: lone surrogates (``"\\ud83d"``),
which ``json.loads`` produces from a legal escape and some decoders leave behind. One such
character makes ``str.encode("utf-8")`` raise, which would abort a record write, an HTTP request or
a log line. :func:`clean_text` replaces each of them with U+FFFD (a well-formed surrogate pair is
joined into its character); every other character, NUL and bidirectional marks included, is kept.
:func:`clean_json` applies it to every string of a JSON-like structure, dictionary keys included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

__all__ = [
    "AGENT_TEXT_MAX_BYTES",
    "REPLACEMENT",
    "clean_json",
    "clean_text",
    "is_clean",
    "map_strings",
    "truncate_utf8",
]

REPLACEMENT = "\ufffd"
"""What an unencodable code point becomes."""

AGENT_TEXT_MAX_BYTES = 64 * 1024
"""The most UTF-8 bytes of one agent turn an env reads (docs/env-contract.md, "reset and step").

64 KiB is about 16,000 tokens of English: a turn of the default 2,048-token agent budget is a few
KiB (the longest assistant turn of the OASST1 reference conversations is 4.1 KB), so only a runaway
generation reaches it; what lies beyond the cap is dropped before the env parses the turn, and
``info["agent_text_truncated"]`` holds the turn's size before the cut."""

T = TypeVar("T")


def is_clean(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (it holds no surrogate code point)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def clean_text(value: str | bytes) -> str:
    """``value`` as a str that always encodes as UTF-8.

    A str is returned unchanged when it is already clean (the common case costs one encode);
    otherwise a surrogate pair becomes its character and a lone surrogate becomes U+FFFD. Bytes
    are decoded as UTF-8 with invalid sequences replaced by U+FFFD.
    """
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if is_clean(value):
        return value
    return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def truncate_utf8(text: str, max_bytes: int) -> str:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes, at a character boundary.

    A text that fits is returned unchanged (a short one without encoding it); a longer one is
    cleaned first (:func:`clean_text`), so the result always encodes.
    """
    if len(text) * 4 <= max_bytes:  # no character takes more than 4 bytes
        return text
    data = clean_text(text).encode("utf-8")
    if len(data) <= max_bytes:
        return text
    return data[:max_bytes].decode("utf-8", "ignore")  # drops only a character cut in two


def map_strings(value: T, function: Callable[[str], str]) -> T:
    """A copy of the JSON-like ``value`` with ``function`` applied to every string (keys included).

    Dicts, lists and tuples are rebuilt (tuples stay tuples); every other value is returned as is.
    """
    if isinstance(value, str):
        return function(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {  # type: ignore[return-value]
            (function(key) if isinstance(key, str) else key): map_strings(item, function) for key, item in value.items()
        }
    if isinstance(value, list):
        return [map_strings(item, function) for item in value]  # type: ignore[return-value]
    if isinstance(value, tuple):
        return tuple(map_strings(item, function) for item in value)  # type: ignore[return-value]
    return value


def clean_json(value: T) -> T:
    """``value`` with :func:`clean_text` applied to every string (see :func:`map_strings`)."""
    return map_strings(value, clean_text)
