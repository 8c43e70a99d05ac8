"""The 13 realistic user behaviours B1–B13: the one registry every env reads.

The entries live in ``data/behaviors.json`` and are validated on first use. Each has an id, a name, a
definition (as the paper's annotation guide states it, of a customer), ``directive`` (the ABCD customer
prompt's wording), ``user_directive`` (the wording any env's LLM user gets, before the env's own
sentence; see :mod:`mimesis_gym.behaviors.play`), the parameters ABCD's rows carry, the behaviours it
is easily confused with, and the earliest turn it should show in (``min_turn``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

__all__ = ["BEHAVIOR_IDS", "CONDITIONS", "CONTROL", "DATA", "Behavior", "behavior", "behaviors", "by_name"]

DATA = Path(__file__).parent / "data" / "behaviors.json"
CONTROL = "control"
"""The condition without a behaviour: the user as the env plays it by default."""
BEHAVIOR_IDS = tuple(f"B{i}" for i in range(1, 14))
CONDITIONS = (CONTROL, *BEHAVIOR_IDS)


@dataclass(frozen=True)
class Behavior:
    """A registry entry (``data/behaviors.json``)."""

    id: str
    name: str
    definition: str
    directive: str
    user_directive: str
    params: tuple[str, ...]
    confusable_with: tuple[str, ...]
    min_turn: int
    judge_sees_thoughts: bool


def _validate(entries: Sequence[Mapping[str, Any]]) -> dict[str, Behavior]:
    registry: dict[str, Behavior] = {}
    for entry in entries:
        item = Behavior(
            id=str(entry["id"]),
            name=str(entry["name"]),
            definition=str(entry["definition"]),
            directive=str(entry["directive"]),
            user_directive=str(entry["user_directive"]),
            params=tuple(entry.get("params", ())),
            confusable_with=tuple(entry.get("confusable_with", ())),
            min_turn=int(entry["min_turn"]),
            judge_sees_thoughts=bool(entry.get("judge_sees_thoughts", False)),
        )
        if item.id in registry:
            raise ValueError(f"{DATA}: duplicate behavior id {item.id}")
        registry[item.id] = item
    if tuple(registry) != BEHAVIOR_IDS:
        raise ValueError(f"{DATA}: ids must be B1…B13 in order; got {list(registry)}")
    names = [item.name for item in registry.values()]
    if len(set(names)) != len(names):
        raise ValueError(f"{DATA}: behavior names must be unique")
    for item in registry.values():
        bad = [other for other in item.confusable_with if other not in registry or other == item.id]
        if bad:
            raise ValueError(f"{DATA}: {item.id} lists invalid confusable ids {bad}")
    return registry


@cache
def behaviors() -> dict[str, Behavior]:
    """The validated registry, id → :class:`Behavior`."""
    with DATA.open(encoding="utf-8") as handle:
        return _validate(json.load(handle))


def behavior(behavior_id: str) -> Behavior:
    """The entry of ``behavior_id``; ``ValueError`` naming the known ids for any other."""
    try:
        return behaviors()[behavior_id]
    except KeyError:
        raise ValueError(f"unknown behavior {behavior_id!r}; known: {', '.join(BEHAVIOR_IDS)}") from None


def by_name(name: str) -> Behavior:
    """The entry named ``name`` (``hidden_evaluation_criteria``, …)."""
    for item in behaviors().values():
        if item.name == name:
            return item
    raise ValueError(f"unknown behavior name {name!r}; known: {', '.join(b.name for b in behaviors().values())}")
