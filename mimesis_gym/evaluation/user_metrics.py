"""Behaviour metrics of a user model over its dialogues (docs/users-report.md).

Pure functions over :class:`UserDialogue` — the user's side of one episode as (message the user
answered, the user's reply) exchanges plus the task's hidden :class:`DisclosureItem`\\ s — so they
are tested on hand-written transcripts and apply alike to simulated users and to real people's
dialogues (the ABCD reference). Every metric says what it counts; ``None`` means "nothing to count".
"""

from __future__ import annotations

import itertools
import re
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.core.disclosure import DisclosureItem, asked, normalise, revealed

__all__ = [
    "Exchange",
    "UserDialogue",
    "answer_directness",
    "behavior_enacted",
    "disclosure_curve",
    "first_reveals",
    "hedging_rate",
    "homogeneity",
    "length_stats",
    "ngram_overlap",
    "role_fidelity",
    "role_flags",
    "self_contradictions",
    "unprompted_disclosure",
]


@dataclass(frozen=True)
class Exchange:
    """One user reply and the message it answered (the agent's message, or the support agent's)."""

    prompt: str
    reply: str


@dataclass(frozen=True)
class UserDialogue:
    """The user's side of one episode: its exchanges in order, the task's hidden items, and failure
    counts by kind (``timeout``, ``bad_json``, ``refusal`` …) over ``attempts`` user calls; ``behavior``
    is the condition the user played (docs/behaviors.md) and ``enacted`` whether its rule saw it
    (``None`` under control)."""

    env: str
    user: str
    task_id: str
    exchanges: tuple[Exchange, ...]
    items: tuple[DisclosureItem, ...] = ()
    failures: dict[str, int] = field(default_factory=dict)
    attempts: int = 0
    behavior: str = CONTROL
    enacted: bool | None = None


def first_reveals(dialogue: UserDialogue) -> dict[str, int]:
    """For each item the user revealed, the index (0-based) of the exchange that first revealed it."""
    found: dict[str, int] = {}
    for index, exchange in enumerate(dialogue.exchanges):
        for item in dialogue.items:
            if item.key not in found and revealed(item, exchange.reply):
                found[item.key] = index
    return found


def disclosure_curve(dialogues: Iterable[UserDialogue], horizon: int) -> list[float | None]:
    """Mean fraction of hidden items revealed by the user's t-th reply, for t = 1..``horizon``.

    Only dialogues with items and at least one reply count (one whose every call failed measures the
    endpoint, not the user); a dialogue with fewer replies keeps its final fraction (the user said
    nothing more). ``None`` at every t when no dialogue counts."""
    with_items = [d for d in dialogues if d.items and d.exchanges]
    if not with_items:
        return [None] * horizon
    curve = []
    for t in range(1, horizon + 1):
        fractions = [sum(1 for index in first_reveals(d).values() if index < t) / len(d.items) for d in with_items]
        curve.append(statistics.fmean(fractions))
    return curve


def unprompted_disclosure(dialogues: Iterable[UserDialogue]) -> tuple[float | None, int]:
    """Share of first reveals made in a reply whose prompt did not ask for the item, and their count.

    ``(None, 0)`` when nothing was revealed."""
    total = unprompted = 0
    for dialogue in dialogues:
        by_key = {item.key: item for item in dialogue.items}
        for key, index in first_reveals(dialogue).items():
            total += 1
            if not asked(by_key[key], dialogue.exchanges[index].prompt):
                unprompted += 1
    return (unprompted / total if total else None), total


def answer_directness(dialogues: Iterable[UserDialogue]) -> tuple[float | None, float | None, int]:
    """Over prompts that ask about at least one hidden item: the share answered directly (the reply
    reveals at least one asked item) and the mean share of asked items revealed (completeness).

    Returns ``(direct, complete, n_questions)``; ``None`` when no prompt asked about an item."""
    direct: list[float] = []
    complete: list[float] = []
    for dialogue in dialogues:
        for exchange in dialogue.exchanges:
            wanted = [item for item in dialogue.items if asked(item, exchange.prompt)]
            if not wanted:
                continue
            hits = sum(1 for item in wanted if revealed(item, exchange.reply))
            direct.append(1.0 if hits else 0.0)
            complete.append(hits / len(wanted))
    if not direct:
        return None, None, 0
    return statistics.fmean(direct), statistics.fmean(complete), len(direct)


_ASSISTANT = re.compile(
    r"\b(how (?:can|may) i (?:help|assist)|is there anything else|i(?:'d| would) be (?:happy|glad) to help|"
    r"i can help you|let me know if you (?:need|have)|here are (?:some|a few) (?:options|suggestions|ideas)|"
    r"feel free to ask|happy to assist|what can i do for you)\b"
)
_AI = re.compile(
    r"\b(as an ai|an ai (?:language )?model|a language model|i am an ai|i'm an ai|as a (?:large )?language model|"
    r"i(?:'m| am) (?:just )?(?:a|an) (?:virtual )?assistant|i(?:'m| am) a (?:chat)?bot)\b"
)
_BREAK = re.compile(
    r"\b(as the user|as a simulated|this (?:simulation|role ?play)|in this (?:game|exercise) i|my instructions|"
    r"my (?:hidden|secret) (?:task|details|preferences)|the hidden (?:story|details|task)|system prompt)\b"
)
_NUMBERED_LIST = re.compile(r"(?m)^\s*(?:\d+[.)]|[-*•])\s+\S")


def role_flags(reply: str) -> set[str]:
    """The role-fidelity faults of one reply, by a scripted detector: ``assistant`` (offers help,
    lists options as a numbered or bulleted list of three or more), ``ai`` (says it is an AI or an
    assistant), ``character`` (talks about the game, its instructions or its hidden data)."""
    text = reply.lower()
    flags = set()
    if _ASSISTANT.search(text) or len(_NUMBERED_LIST.findall(reply)) >= 3:
        flags.add("assistant")
    if _AI.search(text):
        flags.add("ai")
    if _BREAK.search(text):
        flags.add("character")
    return flags


def role_fidelity(dialogues: Iterable[UserDialogue]) -> dict[str, float | None]:
    """Share of replies with each fault (``assistant``, ``ai``, ``character``) and with any (``any``)."""
    counts: dict[str, int] = defaultdict(int)
    replies = 0
    for dialogue in dialogues:
        for exchange in dialogue.exchanges:
            replies += 1
            flags = role_flags(exchange.reply)
            for flag in flags:
                counts[flag] += 1
            counts["any"] += bool(flags)
    return {key: (counts[key] / replies if replies else None) for key in ("assistant", "ai", "character", "any")}


def behavior_enacted(dialogues: Iterable[UserDialogue]) -> float | None:
    """Share of the dialogues played under a behaviour whose rule saw it enacted; ``None`` when none was
    (control)."""
    played = [d.enacted is True for d in dialogues if d.behavior != CONTROL]
    return sum(played) / len(played) if played else None


def length_stats(dialogues: Iterable[UserDialogue]) -> dict[str, float | None]:
    """Words per reply: mean, median and 90th percentile (nearest rank); ``None`` without replies."""
    lengths = sorted(len(exchange.reply.split()) for d in dialogues for exchange in d.exchanges)
    if not lengths:
        return {"mean": None, "median": None, "p90": None}
    p90 = lengths[min(len(lengths) - 1, max(0, -(-9 * len(lengths) // 10) - 1))]
    return {"mean": statistics.fmean(lengths), "median": float(statistics.median(lengths)), "p90": float(p90)}


HEDGES = (
    "maybe",
    "perhaps",
    "not sure",
    "i think",
    "i guess",
    "probably",
    "kind of",
    "sort of",
    "i don't know",
    "don't remember",
    "hard to say",
    "it depends",
    "something like",
    "or so",
)


def hedging_rate(dialogues: Iterable[UserDialogue]) -> float | None:
    """Share of replies containing a hedge or vague phrase from :data:`HEDGES` (word-bounded)."""
    replies = [normalise(exchange.reply) for d in dialogues for exchange in d.exchanges]
    if not replies:
        return None
    return sum(1 for text in replies if any(f" {hedge} " in text for hedge in HEDGES)) / len(replies)


def _ngrams(text: str, n_max: int = 3) -> set[tuple[str, ...]]:
    words = normalise(text).split()
    return {tuple(words[i : i + n]) for n in range(1, n_max + 1) for i in range(len(words) - n + 1)}


def ngram_overlap(first: str, second: str) -> float:
    """Jaccard overlap of the two texts' word 1- to 3-gram sets (1.0 for two empty texts)."""
    a, b = _ngrams(first), _ngrams(second)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def homogeneity(
    dialogues: Iterable[UserDialogue], similarity: Callable[[str, str], float] = ngram_overlap
) -> tuple[float | None, int]:
    """Mean pairwise similarity of replies to the *same* prompt (same env, same normalised text)
    across different dialogues — lower is more diverse — and the number of pairs compared."""
    groups: dict[tuple[str, str], list[tuple[int, str]]] = defaultdict(list)
    for number, dialogue in enumerate(dialogues):
        for exchange in dialogue.exchanges:
            groups[(dialogue.env, normalise(exchange.prompt))].append((number, exchange.reply))
    scores = [
        similarity(a, b)
        for replies in groups.values()
        for (da, a), (db, b) in itertools.combinations(replies, 2)
        if da != db
    ]
    return (statistics.fmean(scores) if scores else None), len(scores)


_POLARITY = re.compile(r"^\W*(yes|no)\b")


def self_contradictions(dialogues: Sequence[UserDialogue]) -> tuple[float | None, int]:
    """Scripted consistency: within a dialogue, the same yes/no question (same normalised prompt)
    answered "yes" once and "no" another time. Returns the share of repeated yes/no questions so
    contradicted and how many repeated questions there were."""
    repeated = contradicted = 0
    for dialogue in dialogues:
        answers: dict[str, set[str]] = defaultdict(set)
        seen: dict[str, int] = defaultdict(int)
        for exchange in dialogue.exchanges:
            match = _POLARITY.match(exchange.reply.lower())
            if match is None:
                continue
            key = normalise(exchange.prompt)
            seen[key] += 1
            answers[key].add(match.group(1))
        for key, count in seen.items():
            if count > 1:
                repeated += 1
                contradicted += len(answers[key]) > 1
    return (contradicted / repeated if repeated else None), repeated
