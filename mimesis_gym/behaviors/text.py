"""Text primitives of the ABCD scripted roles.

- ``plain(s)``: lower case, curly quotes mapped to ASCII, whitespace collapsed to single spaces.
- A phrase **matches** a text when it occurs in ``plain(text)`` not preceded or followed by a letter
  or a digit; ``count`` sums the non-overlapping matches of every phrase of a list.
- ``norm(s)``: lower case, every run of non-alphanumerics replaced by one space, trimmed;
  ``mentions(s, v)`` ⇔ ``norm(v)`` is non-empty and ``" " + norm(v) + " "`` occurs in ``" " + norm(s) + " "``.

These differ on purpose from the shared ``envs/_matching.py`` normalisation (which deletes
apostrophes): the ABCD phrase lists are written with apostrophes (``can't``, ``i'll``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = ["PhraseList", "count", "matches_any", "mentions", "norm", "plain", "words_of"]

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"'})
_SPACE = re.compile(r"\s+")
_NON_ALNUM = re.compile(r"[\W_]+")
_BEFORE = r"(?<![^\W_])"  # not preceded by a letter or digit
_AFTER = r"(?![^\W_])"  # not followed by a letter or digit


@lru_cache(maxsize=8192)
def plain(text: str) -> str:
    """Lower case, curly quotes → ASCII, whitespace collapsed, trimmed."""
    return _SPACE.sub(" ", text.lower().translate(_QUOTES)).strip()


@lru_cache(maxsize=8192)
def norm(text: str) -> str:
    """Lower case, each run of non-alphanumerics → one space, trimmed."""
    return _NON_ALNUM.sub(" ", text.lower()).strip()


def mentions(text: str, value: object) -> bool:
    """Whether ``text`` mentions ``value`` as whole words (after ``norm``)."""
    needle = norm(str(value))
    return bool(needle) and f" {needle} " in f" {norm(text)} "


def words_of(text: str, min_letters: int = 4) -> list[str]:
    """The alphabetic words of ``norm(text)`` with at least ``min_letters`` letters, in order."""
    return [word for word in norm(text).split() if word.isalpha() and len(word) >= min_letters]


@lru_cache(maxsize=4096)
def _pattern(phrase: str) -> re.Pattern[str]:
    return re.compile(_BEFORE + re.escape(plain(phrase)) + _AFTER)


class PhraseList:
    """A named, ordered list of phrases with ``matches`` / ``count`` / ``found`` over plain text."""

    __slots__ = ("_any", "name", "phrases")

    def __init__(self, name: str, phrases: Iterable[str]) -> None:
        self.name = name
        self.phrases: tuple[str, ...] = tuple(dict.fromkeys(plain(p) for p in phrases if p.strip()))
        alternatives = "|".join(re.escape(p) for p in sorted(self.phrases, key=len, reverse=True))
        self._any = re.compile(_BEFORE + "(?:" + alternatives + ")" + _AFTER)

    @classmethod
    def parse(cls, name: str, text: str) -> PhraseList:
        """A list from its comma-separated form (``"unfortunately, i'm sorry, cannot"``)."""
        return cls(name, [phrase.strip() for phrase in text.split(", ")])

    def matches(self, text: str) -> bool:
        return self._any.search(plain(text)) is not None

    def count(self, text: str) -> int:
        """Non-overlapping matches of each phrase, summed over the phrases."""
        flat = plain(text)
        return sum(len(_pattern(phrase).findall(flat)) for phrase in self.phrases)

    def found(self, text: str) -> list[str]:
        """The phrases that match ``text``, in list order."""
        flat = plain(text)
        return [phrase for phrase in self.phrases if _pattern(phrase).search(flat)]

    def __iter__(self):
        return iter(self.phrases)

    def __repr__(self) -> str:
        return f"PhraseList({self.name!r}, {len(self.phrases)} phrases)"


def matches_any(phrases: Sequence[str], text: str) -> bool:
    """Whether any of ``phrases`` matches ``text`` (ad-hoc lists; named lists use :class:`PhraseList`)."""
    flat = plain(text)
    return any(_pattern(phrase).search(flat) for phrase in phrases)


def count(phrases: PhraseList, texts: Iterable[str]) -> int:
    """``count`` over a list of texts: the matches of ``phrases`` summed over ``texts``."""
    return sum(phrases.count(text) for text in texts)
