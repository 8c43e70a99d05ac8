"""Hidden items a user may disclose, and the lexical tests for "revealed" and "asked" (docs/users-report.md).

An env that gives its user private task data (Intention's missing details, Travel's preferences, a
Turtle story's facts, a Tau customer's identifiers, an ABCD customer's account fields) lists them as
:class:`DisclosureItem`\\ s through ``ConversationEnv.disclosure_items()``. The users report then asks
two questions of every exchange:

- :func:`revealed` — does this user reply state the item? True when one of the item's ``values``
  occurs in the reply as a phrase, or when every keyword group of one of its ``keyword_sets`` has a
  member in the reply (the Turtle and Travel packs' own keyword form).
- :func:`asked` — did the agent's message ask about it? True when the message contains one of the
  item's ``ask_terms`` as a whole word or phrase.

Both are word-level matches on normalised text (lower case, punctuation to spaces). Their blind
spots are stated in the docs: a paraphrase with none of the item's words is missed, and a value that
is a common word can match by chance, so values shorter than three characters are never matched.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = ["DisclosureItem", "asked", "content_words", "normalise", "revealed"]

_NON_WORD = re.compile(r"[^\w$#@.]+")
_EDGE_DOTS = re.compile(r"(?<!\w)\.|\.(?!\w)")
MIN_VALUE_CHARS = 3
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "to",
        "in",
        "on",
        "for",
        "with",
        "at",
        "by",
        "from",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "you",
        "your",
        "i",
        "my",
        "me",
        "we",
        "our",
        "they",
        "their",
        "he",
        "she",
        "his",
        "her",
        "what",
        "which",
        "who",
        "whom",
        "how",
        "when",
        "where",
        "why",
        "do",
        "does",
        "did",
        "would",
        "could",
        "should",
        "can",
        "will",
        "any",
        "some",
        "there",
        "here",
        "about",
        "into",
        "as",
        "if",
        "not",
        "no",
        "yes",
    ]
)


@dataclass(frozen=True)
class DisclosureItem:
    """One piece of hidden task data the user holds.

    ``key`` is stable within a task (for per-item bookkeeping); ``label`` is what the item is about
    ("preferred paint finish"); ``values`` are phrasings that state it ("satin"); ``keyword_sets``
    are alternative conjunctions of synonym groups (each a tuple of alternatives) that also state it;
    ``ask_terms`` are words or phrases whose presence in the agent's message means it asked for it.
    """

    key: str
    label: str
    values: tuple[str, ...] = ()
    keyword_sets: tuple[tuple[tuple[str, ...], ...], ...] = ()
    ask_terms: tuple[str, ...] = ()


def normalise(text: str) -> str:
    """Lower case, punctuation (other than ``$ # @`` and dots inside tokens) to single spaces, padded."""
    lowered = _EDGE_DOTS.sub(" ", text.lower())
    return " " + " ".join(_NON_WORD.sub(" ", lowered).split()) + " "


def _has_phrase(normalised_text: str, phrase: str) -> bool:
    needle = normalise(phrase)
    return len(needle.strip()) >= MIN_VALUE_CHARS and needle in normalised_text


def content_words(text: str) -> list[str]:
    """The words of ``text`` that are not stop words and have at least 3 characters, in order."""
    return [word for word in normalise(text).split() if len(word) >= 3 and word not in STOPWORDS]


def revealed(item: DisclosureItem, reply: str) -> bool:
    """Whether ``reply`` states ``item`` (a value phrase, or one full keyword set)."""
    text = normalise(reply)
    if any(_has_phrase(text, value) for value in item.values):
        return True
    return any(_set_matches(text, groups) for groups in item.keyword_sets)


def asked(item: DisclosureItem, message: str) -> bool:
    """Whether the agent's ``message`` asks about ``item`` (one of its ask terms appears)."""
    text = normalise(message)
    return any(_has_phrase(text, term) for term in item.ask_terms)


def _set_matches(normalised_text: str, groups: Sequence[Iterable[str]]) -> bool:
    groups = list(groups)
    return bool(groups) and all(any(_has_phrase(normalised_text, word) for word in group) for group in groups)
