"""Robust JSON coercion of role replies (docs/users.md, "What every chat model guarantees").

User and judge models are asked for a JSON object and often answer with something close to one:
fenced, wrapped in prose, with trailing commas, typographic quotes or unescaped inner quotes.
:func:`coerce_json` tries a fixed ladder of repairs and reports which *tier* succeeded, so a
drifting user model shows up as a rising share of high tiers in the usage records.

Nothing here evaluates text: tier 3 uses :func:`ast.literal_eval`, which accepts literal syntax
only, on at most 20,000 characters.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_gym.core.text import clean_json

__all__ = ["JSONCoercionError", "JSONResult", "coerce_json", "field_text"]

_LITERAL_EVAL_LIMIT = 20_000
_FENCE = re.compile(r"```[A-Za-z0-9_+-]*[ \t]*\n?")
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_TYPOGRAPHIC = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'"})


class JSONCoercionError(ValueError):
    """The text holds no JSON object with every requested key."""


@dataclass(frozen=True, slots=True)
class JSONResult:
    """A coerced object and the tier (0-4) of the attempt that produced it."""

    data: dict[str, Any]
    tier: int


def field_text(value: Any) -> str:
    """A JSON field as text: a string as it is, anything else as Python's ``str`` renders it.

    For fields a role only passes on (feedback, a reply): UserRL's gyms used such a value whatever its
    type, so ``{"judgment": "Yes", "feedback": 5}`` is a valid verdict with feedback ``"5"``.
    """
    return value if isinstance(value, str) else str(value)


def coerce_json(text: str, keys: Sequence[str] | None = None) -> JSONResult:
    """Turn a role reply into a JSON object, trying tiers 0-4 in order.

    Tier 0: ``json.loads``. Tier 1: the inside of the first fenced block, cut from the first
    ``{`` to the last ``}``, parsed non-strictly. Tier 2: tier 1 without trailing commas. Tier 3:
    tier 2 with typographic quotes mapped to ASCII, then ``json.loads`` or ``ast.literal_eval``.
    Tier 4 (only with ``keys``): salvage each key's value by position.

    The first attempt that yields a ``dict`` holding every requested key (matched
    case-insensitively; the result uses the requested spelling, extra keys are kept) wins.
    Raises :class:`JSONCoercionError` otherwise. Every string of the result encodes as UTF-8: a
    lone surrogate (``"\\ud83d"`` is legal JSON) becomes U+FFFD (:func:`~mimesis_gym.core.text.clean_json`).
    """
    candidates = _tier_texts(text)
    for tier, attempt in enumerate(candidates):
        data = attempt()
        if isinstance(data, dict):
            checked = _with_keys(data, keys)
            if checked is not None:
                return JSONResult(clean_json(checked), tier)
    if keys:
        repaired = _TRAILING_COMMA.sub(r"\1", _tier1_text(text)).translate(_TYPOGRAPHIC)
        salvaged = _salvage(repaired, keys)
        if salvaged is not None:
            return JSONResult(clean_json(salvaged), 4)
    wanted = f" with keys {list(keys)}" if keys else ""
    raise JSONCoercionError(f"no JSON object{wanted} in reply: {text[:200]!r}")


def _tier_texts(text: str) -> list[Any]:
    tier1 = _tier1_text(text)
    tier2 = _TRAILING_COMMA.sub(r"\1", tier1)
    tier3 = tier2.translate(_TYPOGRAPHIC)
    return [
        lambda: _loads(text),
        lambda: _loads(tier1, strict=False),
        lambda: _loads(tier2, strict=False),
        lambda: _loads(tier3, strict=False) or _literal(tier3),
    ]


def _tier1_text(text: str) -> str:
    """Unfence and cut from the first ``{`` to the last ``}``."""
    fence = _FENCE.search(text)
    if fence is not None:
        rest = text[fence.end() :]
        closing = rest.find("```")
        body = rest if closing == -1 else rest[:closing]
        # A lone trailing fence (the prompt opened the block) leaves the body before it.
        text = body if body.strip() or closing == -1 else text[: fence.start()]
    first, last = text.find("{"), text.rfind("}")
    if first != -1 and last > first:
        return text[first : last + 1]
    return text


def _loads(text: str, *, strict: bool = True) -> Any:
    try:
        return json.loads(text, strict=strict)
    except (ValueError, RecursionError):
        return None


def _literal(text: str) -> Any:
    if len(text) > _LITERAL_EVAL_LIMIT:
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None


def _with_keys(data: dict[str, Any], keys: Sequence[str] | None) -> dict[str, Any] | None:
    """``data`` with requested keys respelled, or ``None`` when one is missing."""
    if not keys:
        return data
    lowered = {str(key).lower(): key for key in data}
    result = dict(data)
    for key in keys:
        if key in data:
            continue
        found = lowered.get(key.lower())
        if found is None:
            return None
        result[key] = result.pop(found)
    return result


def _salvage(text: str, keys: Sequence[str]) -> dict[str, Any] | None:
    """Tier 4: find each ``key:`` and take the text up to the next requested key or the last ``}``."""
    positions: list[tuple[int, int, str]] = []  # (key start, value start, key)
    for key in keys:
        pattern = re.compile(rf"""(?:["']{re.escape(key)}["']|\b{re.escape(key)}\b)\s*:""", re.IGNORECASE)
        match = pattern.search(text)
        if match is None:
            return None
        positions.append((match.start(), match.end(), key))
    positions.sort()
    end_of_object = text.rfind("}")
    result: dict[str, Any] = {}
    for index, (_, value_start, key) in enumerate(positions):
        if index + 1 < len(positions):
            value_end = text.rfind(",", value_start, positions[index + 1][0])
            if value_end == -1:
                value_end = positions[index + 1][0]
        else:
            value_end = end_of_object if end_of_object > value_start else len(text)
        result[key] = _salvaged_value(text[value_start:value_end])
    return result


def _salvaged_value(raw: str) -> Any:
    value = raw.strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
        return value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
    parsed = _loads(value)
    if isinstance(parsed, (list, int, float, bool)) and not isinstance(parsed, dict):
        return parsed
    return value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
