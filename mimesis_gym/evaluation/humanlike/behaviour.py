"""Behaviour dimensions: how a user writes, informs, clarifies and reacts (docs/humans.md, "Behaviour dimensions").

The definitions follow OdysSim's τ-USI features (``agents/tau_usi/utils.py``,
``extract_conversation_features``) and its per-dimension Dice–Sørensen similarity
(``agents/tau_usi/usi_metric.py``, ``build_row`` and ``compute_dimension_dice``); this is our own
code, checked against theirs on the shipped human corpora (tests/test_humanlike_behaviour.py).

Three steps:

1. :func:`conversation_features` turns the user's turns of one conversation into 19 numbers
   (plus ``n_turns``): mostly the share of user turns that match an English phrase list;
2. :func:`feature_row` averages them over a set of conversations (rates become percentages);
3. :func:`dimension_scores` compares two rows feature by feature, ``2·min(a, b) / (a + b)``
   (1 when both are zero), and reports the mean per dimension on a 0–100 scale.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

__all__ = [
    "DIMENSIONS",
    "DIMENSION_TITLES",
    "FEATURES",
    "PERCENT_FEATURES",
    "conversation_features",
    "dimension_scores",
    "feature_row",
]

DIMENSIONS: dict[str, tuple[str, ...]] = {
    "D1": (
        "politeness_rate",
        "short_msg_rate",
        "formality_rate",
        "ack_only_rate",
        "verbosity_cv",
        "repeat_rate",
        "id_confuse_rate",
    ),
    "D2": ("info_frontload", "id_density", "user_words_per_turn", "opening_words"),
    "D3": ("uncertainty_rate", "certainty_rate", "pushback_q_rate", "clarify_q_rate", "info_q_rate"),
    "D4": ("emotion_rate", "accusation_rate", "pivot_rate"),
}
"""The four dimensions and their features (OdysSim's ``D1_conv``, ``D2_info``, ``D3_clarif``,
``D4_react``)."""

DIMENSION_TITLES: dict[str, str] = {
    "D1": "conversation style",
    "D2": "information",
    "D3": "clarification",
    "D4": "reaction",
}

FEATURES: tuple[str, ...] = tuple(name for names in DIMENSIONS.values() for name in names)
"""Every scored feature, in dimension order."""

PERCENT_FEATURES: frozenset[str] = frozenset(FEATURES) - {
    "verbosity_cv",
    "id_density",
    "user_words_per_turn",
    "opening_words",
}
"""Features that are shares in [0, 1] per conversation and percentages in a :func:`feature_row`."""

SHORT_TURN_WORDS = 3
"""A user turn of at most this many words is *short*."""

REPEATED_TRIGRAM_COUNT = 10
"""A conversation *repeats itself* when one word trigram occurs more than this many times."""


def _phrases(*alternatives: str) -> re.Pattern[str]:
    """One pattern that finds any of ``alternatives`` (regex fragments) as whole words."""
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b")


_AGENT_MARKUP = re.compile(
    r"<\|think\|>.*?<\|/think\|>"  # a reasoning block
    r"|<function=.*?(?:</function>|$)"  # a tool call, closed or cut at the end
    r"|<\|tool\|>.*?<\|/tool\|>",  # a tool result
    re.DOTALL,
)

_POLITE = _phrases(
    "please", "thank you", "thanks", "sorry", "excuse me", "appreciate", "grateful", "kind of you",
    "wonderful", "courteous", "considerate", "i understand", "no worries", "my apologies", "pardon",
)  # fmt: skip
_EMOTION = _phrases(
    "frustrated", "upset", "angry", "confused", "worried", "annoyed", "furious", "ridiculous",
    "terrible", "horrible", "awful", "ugh", "stressed", "anxious", "nervous", "uncomfortable",
    "panic", "disappointed", "disappointing", "irritated", "irritating", "aggravated", "outraged",
    "outrageous", "exasperated", "bothered", "disgusted", "miserable", "devastated", "heartbroken",
    "desperate",
)  # fmt: skip
_DASH = re.compile("[\u2013\u2014]")  # an en or em dash: typed by few people, by many models
_ACK_WORDS = (
    "yes", "yeah", "yea", "yep", "yup", "ok", "okay", "okey", "sure", "right", "fine", "great",
    "perfect", "awesome", "cool", "agree", "agreed", "correct", "absolutely", "indeed", "alright",
    "got it", "go ahead", "sounds good", "that works", "proceed", "confirm", "do it", "no problem",
    "thank you", "thanks", "please", "mhm", "uh-huh", "aight",
)  # fmt: skip
_ACK_ONLY = re.compile(r"(?:" + "|".join(_ACK_WORDS) + r")[\s!.\-,]*")  # the whole (stripped) turn
_IDENTIFIER = re.compile(
    r"(\b[a-z0-9]{6,}\b"  # a long alphanumeric token (also any word of six letters or more)
    r"|#?\w*\d{5,}\w*"  # five or more digits in a row
    r"|\w+_\w+_\d{3,}"  # snake_case with a numeric tail
    r"|gift_card_\w+|credit_card_\w+|paypal_\w+"  # τ-bench payment ids
    r"|\w+@\w+\.\w+)"  # an e-mail address
)
_UNCERTAIN = _phrases(
    "i think", "not sure", "i don'?t remember", "i don'?t recall", "i believe", "probably",
    "maybe", "i forgot", "don'?t know", "i guess", "i'?m not sure", "if i recall", "i don'?t have",
    "can'?t recall", "can'?t find", "i'?m unsure", "i might", "perhaps", "apparently", "sort of",
    "kind of", "somewhat", "partly", "possibly", "vaguely", "roughly", "hesitant", "doubtful",
    "confused", "uncertain", "dunno",
)  # fmt: skip
_CERTAIN = _phrases(
    "definitely", "absolutely", "certainly", "exactly", "precisely", "clearly", "always", "never",
    "completely", "entirely", "fully", "obvious", "obviously", "undoubtedly", "without a doubt",
    "for sure", "of course", "guaranteed", "no doubt",
)  # fmt: skip
_PUSHBACK = _phrases(
    "are you sure",
    "that'?s (?:not right|wrong|incorrect|not what)",
    "i already (?:told|said|gave|provided|mentioned)",
    "you already (?:asked|have)",
    "try again",
    "check again",
    "that can'?t be (?:right|correct)",
    "that'?s (?:crazy|nonsense|ridiculous|absurd)",
    "this is (?:not fair|nonsense)",
    "why (?:can'?t|won'?t|didn'?t|isn'?t|aren'?t|would)",
    "doesn'?t (?:seem|sound|look|make sense)",
    "not what i (?:asked|said|meant|wanted)",
    "do(?:n'?t| not) ask me .* again",
    "i would never",
)
_CLARIFY = _phrases(
    "what do you mean",
    "what does that mean",
    "what did you mean",
    "could you (?:clarify|elaborate|specify)",
    "can you (?:explain|clarify|elaborate)",
    "i don'?t understand",
    "i dont understand",
    "what'?s the difference",
    "whats the difference",
    "what exactly",
    "what specifically",
    "which (?:one|reservation|order|flight|option|plan|account|item|product) (?:is|was|do|should|did|would)",
    "i'?m not sure which",
    "im not sure which",
    "which is which",
    r"you (?:said|mentioned|told me|wrote|indicated) .{0,30}\?",
    "that mean",
    "what does that (?:involve|include|entail|look like)",
    "(?:sorry|wait),? (?:what|which|how|i don'?t)",
    "can you (?:be more specific|give me more detail|break that down|walk me through)",
    "i'?m (?:confused|lost)",
    "im (?:confused|lost)",
    "(?:how|what) (?:exactly|specifically) (?:does|do|is|are|would|will|should)",
    "could you (?:repeat|say) that",
    "can you (?:repeat|say) that",
    "what (?:is|are) the (?:options|choices|alternatives|details)",
    "i need (?:more|some) (?:info|information|details|clarification)",
    "(?:so|wait),? (?:you'?re saying|does that mean|is that)",
    r"meaning\??",
    r"how so\??",
    r"in what (?:way|sense)\??",
)
_INFO_QUESTION = _phrases(
    "what is (?:the|my)",
    "what'?s (?:the|my)",
    "how much",
    "how many",
    "when (?:will|does|is|can|did)",
    "where (?:is|are|was|can)",
    "how (?:do|can|would|should) i",
    "what are (?:the|my)",
    "can you (?:check|tell|find|look|see|show|help|list)",
    "do you (?:have|know|see)",
    "is (?:there|it|that) (?:a |any )?",
    "what options",
    "how long",
    "what.s the (?:status|price|cost|total|balance)",
)
_ACCUSATION = _phrases(
    "blame", "fault", "ridiculous", "wrong", "useless", "incompetent", "failure", "misleading",
    "irresponsible", "unacceptable", "disgrace", "insult", "scam", "shame", "stupid", "trouble",
    "disappointing", "ruined",
)  # fmt: skip
_PIVOT = _phrases(
    "(?:wait|actually) (?:can|let|could|would)",
    "i(?:'?d| would) (?:like|prefer|rather)",
    "(?:can you|can we|could you) just",
    "instead",
    "rather than",
    "how about",
    "what about",
    "what if",
    "on second thought",
    "is there (?:a |any |another )?way to",
    "(?:let'?s|can we|lets) (?:try|do|go with|switch|change)",
    "maybe (?:we|i|you) (?:should|could|can)",
    "(?:change|switch|try) (?:it |that )?(?:to|something|a different)",
)
_ASSISTANT_VOICE = _phrases(  # a user who talks like the support agent (identity confusion)
    "how can i (?:help|assist)",
    "how may i (?:help|assist)",
    "what can i (?:do|help|assist) (?:for|with)",
    "do you (?:want|require|wish|prefer)",
    "would you (?:like|prefer)",
    "let me (?:check|look|verify|find|pull up|search|assist|help)",
    "i(?:'?ll| will) (?:check|look into|verify|process|handle|assist|help)",
    "i(?:'?m| am) (?:happy|glad|here) to (?:help|assist)",
    "is there anything else i can",
    "thank you for (?:calling|contacting|reaching|choosing|your patience)",
    "for (?:security|verification) (?:purposes|reasons)",
    "(?:may|could) i (?:verify)",
    "allow me to",
    "permit me to",
    "your (?:order|account|reservation|booking|request|ticket|case|inquiry)",
    "i (?:see|understand) (?:that|your)",
    "according to (?:our|the) (?:records|system|policy)",
    "(?:our|the) (?:policy|system|records) (?:shows?|indicates?)",
    "i (?:can|could) (?:offer|suggest|recommend)",
    "(?:have you|did you) (?:tried?|considered?)",
    "i apologize for (?:the|any) (?:inconvenience|confusion|delay|trouble)",
)


def _mean(values: Sequence[float]) -> float:
    """The arithmetic mean, 0.0 for no values."""
    return sum(values) / len(values) if values else 0.0


def _share(pattern: re.Pattern[str], texts: Sequence[str]) -> float:
    """The share of ``texts`` in which ``pattern`` finds a match."""
    return _mean([1.0 if pattern.search(text) else 0.0 for text in texts])


def _coefficient_of_variation(counts: Sequence[int]) -> float:
    """Population standard deviation over mean; 0.0 for a zero mean or fewer than two values."""
    mean = _mean(counts)
    if mean <= 0 or len(counts) < 2:
        return 0.0
    variance = sum((count - mean) ** 2 for count in counts) / len(counts)
    return variance**0.5 / mean


def _repeats_itself(texts: Sequence[str]) -> bool:
    """Whether one word trigram (within a turn) occurs more than ``REPEATED_TRIGRAM_COUNT`` times
    over all ``texts``."""
    trigrams: Counter[tuple[str, ...]] = Counter()
    for text in texts:
        words = text.split()
        trigrams.update(tuple(words[start : start + 3]) for start in range(len(words) - 2))
    return any(count > REPEATED_TRIGRAM_COUNT for count in trigrams.values())


def _question_kinds(texts: Sequence[str]) -> tuple[float, float, float]:
    """Shares of turns that push back, ask for clarification, or ask for information.

    Each turn counts once, for the first of the three kinds it matches, in that order."""
    counts = [0, 0, 0]
    for text in texts:
        for kind, pattern in enumerate((_PUSHBACK, _CLARIFY, _INFO_QUESTION)):
            if pattern.search(text):
                counts[kind] += 1
                break
    return counts[0] / len(texts), counts[1] / len(texts), counts[2] / len(texts)


def conversation_features(user_turns: Sequence[str], n_turns: int | None = None) -> dict[str, float] | None:
    """The behaviour features of one conversation from its user's turns, in order.

    Agent markup in a turn (``<|think|>…<|/think|>``, ``<function=…</function>``,
    ``<|tool|>…<|/tool|>``) is removed first. ``n_turns`` (the conversation's length, both sides;
    the number of user turns when omitted) is passed through as ``n_turns`` and scores nothing.
    Returns every feature of :data:`FEATURES` plus ``n_turns``; rates are shares in [0, 1].
    None when there is no user turn."""
    if not user_turns:
        return None
    texts = [_AGENT_MARKUP.sub("", turn) for turn in user_turns]
    lowered = [text.lower() for text in texts]
    words = [len(text.split()) for text in texts]
    total_words = sum(words)
    pushback, clarify, info_question = _question_kinds(lowered)
    return {
        "n_turns": float(len(user_turns) if n_turns is None else n_turns),
        "user_words_per_turn": _mean(words),
        "politeness_rate": _share(_POLITE, lowered),
        "short_msg_rate": _mean([1.0 if count <= SHORT_TURN_WORDS else 0.0 for count in words]),
        "formality_rate": _share(_DASH, texts),
        "ack_only_rate": _mean([1.0 if _ACK_ONLY.fullmatch(text.strip()) else 0.0 for text in lowered]),
        "verbosity_cv": _coefficient_of_variation(words),
        "repeat_rate": float(_repeats_itself(lowered)),
        "id_confuse_rate": float(any(_ASSISTANT_VOICE.search(text) for text in lowered)),
        "info_frontload": sum(words[:2]) / total_words if total_words else 0.0,
        "id_density": _mean([float(len(_IDENTIFIER.findall(text))) for text in lowered]),
        "opening_words": float(words[0]),
        "uncertainty_rate": _share(_UNCERTAIN, lowered),
        "certainty_rate": _share(_CERTAIN, lowered),
        "pushback_q_rate": pushback,
        "clarify_q_rate": clarify,
        "info_q_rate": info_question,
        "emotion_rate": _share(_EMOTION, lowered),
        "accusation_rate": _share(_ACCUSATION, lowered),
        "pivot_rate": _share(_PIVOT, lowered),
    }


def feature_row(features: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each feature (and ``n_turns``) over conversations, as OdysSim's ``build_row``:
    the features of :data:`PERCENT_FEATURES` as percentages (mean × 100), the others as they are.

    ``features`` are :func:`conversation_features` results (drop the None ones first).
    Raises ValueError for no conversation, or one that lacks a feature."""
    rows = list(features)
    if not rows:
        raise ValueError("feature_row needs at least one conversation's features; got none")
    row: dict[str, float] = {}
    for name in ("n_turns", *FEATURES):
        missing = [index for index, features_ in enumerate(rows) if name not in features_]
        if missing:
            raise ValueError(f"conversation {missing[0]} has no feature {name!r}: pass conversation_features results")
        mean = np.mean([features_[name] for features_ in rows])
        row[name] = float(mean * 100 if name in PERCENT_FEATURES else mean)
    return row


def _dice(a: float, b: float) -> float:
    """Dice–Sørensen similarity of two magnitudes: ``2·min / sum``, 1.0 when both are zero."""
    a, b = abs(a), abs(b)
    return 2.0 * min(a, b) / (a + b) if a + b > 0 else 1.0


def dimension_scores(reference_row: Mapping[str, float], simulated_row: Mapping[str, float]) -> dict[str, float]:
    """Per dimension of :data:`DIMENSIONS`, the mean Dice–Sørensen similarity of its features
    between two :func:`feature_row` s, × 100 (0–100; 100 when the rows agree on every feature).

    Symmetric in its two rows. Raises ValueError naming a feature either row lacks."""
    for label, row in (("reference_row", reference_row), ("simulated_row", simulated_row)):
        missing = [name for name in FEATURES if name not in row]
        if missing:
            raise ValueError(f"{label} lacks features {missing}: build it with feature_row")
    return {
        dimension: float(np.mean([_dice(reference_row[name], simulated_row[name]) for name in names]) * 100)
        for dimension, names in DIMENSIONS.items()
    }
