"""Match-normalisation shared by the scripted roles of several envs.

``norm(s)``: NFKC, lower case, curly quotes to ASCII, apostrophes deleted, every character outside
``[a-z0-9]`` replaced by a space, spaces collapsed, padded with one space on each side. A phrase
*matches* a text iff the padded ``norm`` of the phrase is a substring of the ``norm`` of the text,
so matching is on whole words. A **keyword spec** is a list of groups (each a list of phrases): it
matches when every group has a matching phrase; its **strength** is its number of groups.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Sequence
from functools import lru_cache

__all__ = [
    "NEGATION_TOKENS",
    "STOPWORDS",
    "is_negated",
    "matches",
    "norm",
    "norm_tokens",
    "shared_ngram",
    "spec_matches",
    "spec_strength",
]

_QUOTES = str.maketrans({"‘": "'", "’": "'", "‚": "'", "‛": "'", "“": '"', "”": '"', "„": '"', "‟": '"'})
_NON_ALNUM = re.compile(r"[^a-z0-9]+")

NEGATION_TOKENS = frozenset(
    [
        "not",
        "no",
        "never",
        "nothing",
        "nobody",
        "none",
        "neither",
        "nor",
        "without",
        "didnt",
        "doesnt",
        "dont",
        "isnt",
        "wasnt",
        "werent",
        "arent",
        "hasnt",
        "havent",
        "hadnt",
        "cant",
        "couldnt",
        "wouldnt",
        "shouldnt",
        "wont",
    ]
)
"""A question is negated when one of these occurs as a word anywhere except the first position."""

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "almost",
        "also",
        "am",
        "an",
        "and",
        "any",
        "anybody",
        "anyone",
        "anything",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "either",
        "else",
        "enough",
        "even",
        "ever",
        "every",
        "few",
        "for",
        "from",
        "further",
        "get",
        "gets",
        "getting",
        "got",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "however",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "least",
        "less",
        "let",
        "like",
        "made",
        "make",
        "many",
        "may",
        "me",
        "might",
        "more",
        "most",
        "much",
        "must",
        "my",
        "myself",
        "need",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "often",
        "on",
        "once",
        "only",
        "or",
        "other",
        "others",
        "otherwise",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "per",
        "perhaps",
        "please",
        "quite",
        "rather",
        "really",
        "same",
        "shall",
        "she",
        "should",
        "since",
        "so",
        "some",
        "somebody",
        "someone",
        "something",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "thing",
        "things",
        "this",
        "those",
        "though",
        "through",
        "thus",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "us",
        "very",
        "via",
        "was",
        "we",
        "well",
        "were",
        "what",
        "whatever",
        "when",
        "where",
        "whether",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "within",
        "without",
        "would",
        "yes",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    ]
)
"""English function words (shared by IntentionGym's and TravelGym's keyword rules)."""


@lru_cache(maxsize=65536)
def norm(text: str) -> str:
    """The padded match form of ``text`` (see the module docstring)."""
    text = unicodedata.normalize("NFKC", text).lower().translate(_QUOTES).replace("'", "")
    collapsed = _NON_ALNUM.sub(" ", text).strip()
    return f" {collapsed} " if collapsed else " "


def norm_tokens(text: str) -> list[str]:
    """The words of ``norm(text)``."""
    return norm(text).split()


def matches(phrase: str, text: str) -> bool:
    """Whether ``phrase`` occurs in ``text`` as whole words after normalisation."""
    key = norm(phrase)
    return key != " " and key in norm(text)


def spec_matches(spec: Sequence[Sequence[str]], text: str) -> bool:
    """Whether every group of the keyword spec has a phrase matching ``text`` (an empty spec never matches)."""
    return bool(spec) and all(any(matches(phrase, text) for phrase in group) for group in spec)


def spec_strength(spec: Sequence[Sequence[str]]) -> int:
    return len(spec)


def is_negated(question: str) -> bool:
    """A negation token at any word position except the first."""
    return any(token in NEGATION_TOKENS for token in norm_tokens(question)[1:])


def shared_ngram(a: Iterable[str], b_ngrams: set[tuple[str, ...]], n: int) -> tuple[str, ...] | None:
    """The first ``n``-word sequence of token list ``a`` that is in ``b_ngrams`` (originality checks)."""
    tokens = list(a)
    for start in range(len(tokens) - n + 1):
        gram = tuple(tokens[start : start + n])
        if gram in b_ngrams:
            return gram
    return None
