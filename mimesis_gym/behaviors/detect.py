"""Enactment checks: did the user actually play its behaviour? One rule per behaviour (docs/behaviors.md).

Each rule reads the episode's :class:`Exchange` list (the agent's message and the user's own reply per
turn) and the episode's facts (:mod:`mimesis_gym.behaviors.play`), and returns a :class:`Detection`:
whether the behaviour showed, and in which turns. The rules are those of ABCD's scripted judge
(docs/envs/abcd.md, "Scripted judge") written over any env's turns, with the same phrase lists; where
ABCD grades (0, 0.5, 1) these say "enacted" from the grade ABCD calls an exhibit of half or more. They
read words, not meaning: a user that plays a behaviour in words none of the lists hold is missed, and
``eval --judge`` adds a model's reading beside them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_gym.behaviors.phrases import (
    BLAME,
    COMPLETION,
    DISENGAGE,
    DISSATISFIED,
    INSULT,
    NEW_REQ,
    PERSIST,
    PRESSURE,
    PROGRESS,
    PROHIBIT,
    REFUSAL,
    REFUSE_INFO,
    request_clauses,
)
from mimesis_gym.behaviors.text import matches_any, mentions

__all__ = ["DETECTORS", "Detection", "Detector", "Exchange", "detect", "is_low_signal_pressure", "progress_turn"]


@dataclass(frozen=True, slots=True)
class Exchange:
    """One turn: the agent's action (kind and text) and the user's own reply (``None``: the step did
    not reach the user, e.g. a search or a final answer the env scored itself)."""

    turn: int
    agent_kind: str
    agent_text: str
    user_text: str | None


@dataclass(frozen=True, slots=True)
class Detection:
    """Whether the behaviour showed, and the turns where it did."""

    enacted: bool
    turns: tuple[int, ...] = ()


Detector = Callable[[Sequence[Exchange], Mapping[str, Any]], Detection]


def _replies(exchanges: Sequence[Exchange]) -> list[tuple[int, str]]:
    return [(e.turn, e.user_text) for e in exchanges if e.user_text is not None]


def _found(turns: Sequence[int]) -> Detection:
    return Detection(bool(turns), tuple(turns))


def progress_turn(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> int | None:
    """The first turn where the agent made real progress: an action of the env's progress kinds
    (``facts["progress_kinds"]``: a recommendation, an answer) or a message reporting completed work."""
    kinds = facts.get("progress_kinds", ())
    for exchange in exchanges:
        if exchange.agent_kind in kinds or COMPLETION.matches(exchange.agent_text):
            return exchange.turn
        if PROGRESS.matches(exchange.agent_text):
            return exchange.turn
    return None


def is_low_signal_pressure(text: str, informative: Sequence[str]) -> bool:
    """B9's hit (ABCD's rule): at most 60 characters, pressure words, ``!!``/``??`` or shouting, and no
    mention of a value the agent could use (``informative``: the task's hidden values)."""
    stripped = text.strip()
    if len(stripped) > 60:
        return False
    letters = [c for c in stripped if c.isalpha()]
    shouting = len(letters) >= 4 and sum(c.isupper() for c in letters) / len(letters) > 0.5
    pressuring = PRESSURE.matches(stripped) or "!!" in stripped or "??" in stripped or shouting
    return pressuring and not any(len(value) > 3 and mentions(stripped, value) for value in informative)


def _b1(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    start = progress_turn(exchanges, facts)
    if start is None:
        return Detection(False)
    return _found([t for t, text in _replies(exchanges) if t >= max(2, start) and DISSATISFIED.matches(text)])


def _b2(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    start = progress_turn(exchanges, facts)
    if start is None:
        return Detection(False)
    words = tuple(facts.get("new_requirement_words", ()))
    hits = [t for t, text in _replies(exchanges) if t >= start and NEW_REQ.matches(text) and matches_any(words, text)]
    return _found(hits)


def _b3(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    return _found(
        [e.turn for e in exchanges if e.user_text and "?" in e.agent_text and REFUSE_INFO.matches(e.user_text)]
    )


def _b4(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    refusal = next((e.turn for e in exchanges if REFUSAL.matches(e.agent_text)), None)
    if refusal is None:
        return Detection(False)
    return _found([t for t, text in _replies(exchanges) if t >= refusal and PERSIST.matches(text)])


def _b5(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    words = tuple(facts.get("omitted_detail_words", ()))
    replies = _replies(exchanges)
    first = next((t for t, text in replies if matches_any(words, text)), None)
    if first is None or first < 2:
        return Detection(False, (first,) if first else ())
    blamed = [t for t, text in replies if t >= first and BLAME.matches(text)]
    if not blamed:
        return Detection(False, (first,))
    return Detection(True, tuple(dict.fromkeys((first, blamed[0]))))


def _b6(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    words = tuple(facts.get("target_topic_words", ()))
    replies = _replies(exchanges)
    if any(t < 2 and matches_any(words, text) for t, text in replies):
        return Detection(False)
    return _found([t for t, text in replies if t >= 2 and matches_any(words, text)])


def _b7(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    replies = _replies(exchanges)
    total = sum(PROHIBIT.count(text) for _, text in replies)
    return Detection(total >= 2, tuple(t for t, text in replies if PROHIBIT.matches(text)))


def _b8(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    return _found([t for t, text in _replies(exchanges) if mentions(text, facts.get("false_value", ""))])


def _b9(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    informative = tuple(str(value) for value in facts.get("informative", ()))
    return _found([t for t, text in _replies(exchanges) if t >= 2 and is_low_signal_pressure(text, informative)])


def _b10(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    return _found([t for t, text in _replies(exchanges) if t >= 2 and DISENGAGE.matches(text)][:1])


def _b11(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    replies = _replies(exchanges)
    first_a = next((t for t, text in replies if mentions(text, facts.get("value_a", ""))), None)
    first_b = next((t for t, text in replies if mentions(text, facts.get("value_b", ""))), None)
    if first_a is None or first_b is None or first_b <= first_a:
        return Detection(False, tuple(t for t in (first_a, first_b) if t is not None))
    return Detection(True, (first_a, first_b))


def _b12(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    return _found([t for t, text in _replies(exchanges) if request_clauses(text) >= 3])


def _b13(exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    return _found([t for t, text in _replies(exchanges) if INSULT.matches(text)])


DETECTORS: dict[str, Detector] = {
    "B1": _b1,
    "B2": _b2,
    "B3": _b3,
    "B4": _b4,
    "B5": _b5,
    "B6": _b6,
    "B7": _b7,
    "B8": _b8,
    "B9": _b9,
    "B10": _b10,
    "B11": _b11,
    "B12": _b12,
    "B13": _b13,
}
"""The rule of each behaviour, over any env's exchanges."""


def detect(behavior_id: str, exchanges: Sequence[Exchange], facts: Mapping[str, Any]) -> Detection:
    """Whether ``behavior_id`` showed in ``exchanges`` (``KeyError`` for an id outside B1–B13)."""
    return DETECTORS[behavior_id](exchanges, facts)
