"""Judge-free measures of a simulated user from the UserLM evaluation (docs/humans.md, "UserLM measures").

The definitions follow OdysSim's port of the UserLM suite (``agents/userllm/helpers.py`` and
``agents/userllm/agent.py``, ``compute_userllm_aggregates``); this is our own code, checked against
theirs on the shipped human corpora (tests/test_humanlike_behaviour.py):

- :func:`first_turn_diversity`: how different a user's opening messages are from each other;
- :func:`intent_decomposition`: how much of its goal's wording a user copies into a turn
  (lower is more human: people reveal their goal bit by bit, in their own words);
- :func:`termination_f1`: how well a user knows when to end the conversation.

Where the reference reports 0.0 for a measure that has nothing to measure (fewer than two
openings, no goal, no positive label or prediction), these return None.
"""

from __future__ import annotations

import string
import unicodedata
from collections.abc import Sequence
from itertools import combinations

__all__ = [
    "STOPWORDS",
    "first_turn_diversity",
    "intent_decomposition",
    "intent_overlap",
    "termination_f1",
    "tokens",
]

STOPWORDS: frozenset[str] = frozenset((
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "could", "did", "do", "does",
    "for", "from", "had", "has", "have", "how", "i", "if", "in", "into", "is", "it", "its", "me",
    "might", "my", "of", "on", "or", "our", "should", "so", "that", "the", "their", "them", "then",
    "there", "these", "they", "this", "to", "us", "was", "we", "were", "what", "when", "where",
    "which", "who", "why", "will", "with", "would", "you", "your",
))  # fmt: skip
"""Words that say nothing about a goal, left out of :func:`intent_overlap` (UserLM's list)."""

_JOINERS = frozenset("\u200c\u200d")  # zero-width non-joiner and joiner count as word characters
_LETTER_SYMBOLS = ((0x24B6, 0x24E9), (0x1F130, 0x1F149), (0x1F150, 0x1F169), (0x1F170, 0x1F189))
"""Circled and squared Latin letters: symbols that Unicode also calls alphabetic."""


def _is_word_char(char: str) -> bool:
    """A Unicode word character (as the ``regex`` package's ``\\w``): a letter, mark, decimal digit,
    letter number, connector (``_``), zero-width joiner, or a circled or squared letter."""
    category = unicodedata.category(char)
    if category[0] in "LM" or category in ("Nd", "Nl", "Pc") or char in _JOINERS:
        return True
    return category == "So" and any(first <= ord(char) <= last for first, last in _LETTER_SYMBOLS)


def _is_cjk(char: str) -> bool:
    """A CJK ideograph or a Japanese kana."""
    return "\u4e00" <= char <= "\u9fff" or "\u3040" <= char <= "\u30ff"


def tokens(text: str) -> list[str]:
    """The lowercased tokens of ``text``: each run of word characters, and each punctuation or
    symbol character on its own (other characters, such as spaces, separate tokens and vanish)."""
    found: list[str] = []
    word: list[str] = []
    for char in text.lower():
        if _is_word_char(char):
            word.append(char)
            continue
        if word:
            found.append("".join(word))
            word.clear()
        if unicodedata.category(char)[0] in "PS":
            found.append(char)
    if word:
        found.append("".join(word))
    return found


def first_turn_diversity(first_turns: Sequence[str]) -> float | None:
    """1 − the mean Jaccard similarity of the token sets (:func:`tokens`) of every pair of opening
    messages: 0 when all openings use the same tokens, towards 1 as they share fewer.

    ``first_turns`` are the first user messages of different conversations (one each); openings
    without a token (empty, blank) are left out. None when fewer than two remain. Its cost grows
    with the square of the number of openings."""
    token_sets = [set(tokens(turn)) for turn in first_turns]
    token_sets = [found for found in token_sets if found]
    if len(token_sets) < 2:
        return None
    similarities = [len(a & b) / len(a | b) for a, b in combinations(token_sets, 2)]
    return 1.0 - sum(similarities) / len(similarities)


def _content_words(text: str) -> set[str]:
    """The distinct tokens of ``text`` that carry content: alphanumeric (or one CJK character),
    not a :data:`STOPWORDS` word."""
    return {
        token
        for token in tokens(text)
        if token not in STOPWORDS
        and not all(char in string.punctuation for char in token)
        and (token.isalnum() or (len(token) == 1 and _is_cjk(token)))
    }


def intent_overlap(intent: str, user_turn: str) -> float:
    """The share of the turn's distinct content words that also occur in the intent:
    ``|intent ∩ turn| / |turn|`` over :func:`_content_words`; 0.0 when either has none.

    Lower is more human-like: 1.0 means every content word of the turn was copied from the goal."""
    intent_words = _content_words(intent)
    turn_words = _content_words(user_turn)
    if not intent_words or not turn_words:
        return 0.0
    return len(intent_words & turn_words) / len(turn_words)


def intent_decomposition(intents: Sequence[str], user_turns: Sequence[str]) -> float | None:
    """The mean :func:`intent_overlap` over cases, each a user turn and the intent (goal) of its
    conversation, paired by position; the first and every later turn of a conversation count alike.

    A turn should be the user's text only (without an end-of-conversation marker). Cases whose
    intent is blank are left out, as the reference leaves out cases without an intent. None when no
    case remains. Raises ValueError when the two sequences differ in length."""
    if len(intents) != len(user_turns):
        raise ValueError(
            f"intent_decomposition pairs intents with user turns: got {len(intents)} intents"
            f" and {len(user_turns)} turns"
        )
    overlaps = [
        intent_overlap(intent, turn) for intent, turn in zip(intents, user_turns, strict=True) if intent.strip()
    ]
    return sum(overlaps) / len(overlaps) if overlaps else None


def termination_f1(predicted: Sequence[bool], truth: Sequence[bool]) -> float | None:
    """F1 of the decision to end the conversation, "ends here" being the positive class.

    ``predicted[i]``: whether the user ended the conversation at user turn ``i``; ``truth[i]``:
    whether the human did (their last turn). Pass one entry per replayed user turn. None when no
    case is positive in either sequence (precision and recall are undefined; the reference says
    0.0). Raises ValueError when the sequences differ in length."""
    if len(predicted) != len(truth):
        raise ValueError(f"termination_f1 pairs predictions with labels: got {len(predicted)} and {len(truth)}")
    true_positive = sum(1 for guess, label in zip(predicted, truth, strict=True) if guess and label)
    false_positive = sum(1 for guess, label in zip(predicted, truth, strict=True) if guess and not label)
    false_negative = sum(1 for guess, label in zip(predicted, truth, strict=True) if label and not guess)
    if true_positive + false_positive + false_negative == 0:
        return None
    if true_positive == 0:
        return 0.0
    precision = true_positive / (true_positive + false_positive)
    recall = true_positive / (true_positive + false_negative)
    return 2 * precision * recall / (precision + recall)
