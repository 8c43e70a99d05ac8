"""The action grammar shared by the agent-facing envs (docs/env-contract.md, "The action grammar").

An action is ``[action] text``, ``[search] text``, ``[answer] text`` or ``[finish]``, or the
equivalent tool call ``interact_with_env(choice, content)`` given as a dict or its JSON (content that
already starts with the chosen tag, e.g. ``content="[answer] -16"``, is kept as it is). Parsing
never raises: input that does not fit the grammar becomes a :class:`MalformedAction` whose
``message`` says exactly what was wrong and what the grammar is; the env spends the turn on it.

An env whose UserRL gym read more text than this grammar (TelepathyGym, PersuadeGym) takes
``action_grammar="userrl"``: its :class:`UserRLReading` then turns that text into a
:class:`ParsedAction` as UserRL did (a tag with empty content, text without a tag) instead of a
:class:`MalformedAction` (docs/env-contract.md, "The action grammar").
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mimesis_gym.core.text import AGENT_TEXT_MAX_BYTES, clean_json, truncate_utf8

__all__ = [
    "ACTION_GRAMMARS",
    "ACTION_KINDS",
    "MalformedAction",
    "ParsedAction",
    "UserRLReading",
    "cap_action",
    "grammar_help",
    "interact_with_env_tool",
    "parse_action",
    "userrl_reading",
]

ACTION_KINDS: tuple[str, ...] = ("action", "search", "answer", "finish")
"""Every tag of the grammar, in the order the help text lists them."""

_TAGS = {f"[{kind}]": kind for kind in ACTION_KINDS}

ACTION_GRAMMARS: tuple[str, ...] = ("native", "userrl")
"""The values of an env's ``action_grammar``: this grammar, or UserRL's reading of the same text."""


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """A well-formed action.

    ``tag`` is the kind written by the agent, ``kind`` the kind the env handles it as (they differ
    only for a tolerated alias, e.g. TurtleGym's ``[search]`` handled as ``action``). ``canonical``
    is the action's canonical string, which the transcript records. Under a :class:`UserRLReading`,
    ``content`` may be empty and text without a tag has ``tag=""``.
    """

    kind: str
    tag: str
    content: str
    canonical: str


@dataclass(frozen=True, slots=True)
class MalformedAction:
    """Input outside the grammar: ``message`` is the observation the agent receives."""

    reason: str
    message: str
    transcript_text: str


@dataclass(frozen=True, slots=True)
class UserRLReading:
    """How an env's UserRL gym read text this grammar refuses (``action_grammar="userrl"``).

    A tag with no content is sent on with ``content=""`` (UserRL's ``action_str[8:].strip()``). Text
    that starts with no tag of the grammar (none at all, wrong case, unknown or unclosed, or a ``{``
    that is not JSON), the empty action included, is handled as ``untagged_kind`` with the text as
    ``content``, less its first ``untagged_skip`` characters (TelepathyGym sliced ``action_str[8:]``
    off every action it did not read as a guess; PersuadeGym kept the whole text). Tool calls, a
    non-string action and ``[finish]`` are read as in the native grammar.
    """

    untagged_kind: str
    untagged_skip: int = 0


def userrl_reading(action_grammar: str, reading: UserRLReading) -> UserRLReading | None:
    """``reading`` for ``action_grammar="userrl"``, ``None`` for ``"native"``; ``ValueError`` naming the
    choices for any other value."""
    if action_grammar not in ACTION_GRAMMARS:
        raise ValueError(
            f"action_grammar must be one of {', '.join(map(repr, ACTION_GRAMMARS))}; got {action_grammar!r}"
        )
    return reading if action_grammar == "userrl" else None


def grammar_help(accepted: Collection[str]) -> str:
    """The one-sentence description of the grammar for the kinds an env accepts."""
    kinds = [kind for kind in ACTION_KINDS if kind in accepted]
    tags = ", ".join("[finish]" if kind == "finish" else f"[{kind}] <content>" for kind in kinds)
    choices = ", ".join(kinds)
    return (
        f"Write the action as one of {tags} (tags in lower case, at the start), "
        f'or call interact_with_env with "choice" one of {choices} and a "content".'
    )


def interact_with_env_tool(accepted: Collection[str], description: str = "") -> dict[str, Any]:
    """The OpenAI tool schema ``interact_with_env(choice, content)`` for the accepted kinds."""
    return {
        "type": "function",
        "function": {
            "name": "interact_with_env",
            "description": description or "Interact with the environment.",
            "parameters": {
                "type": "object",
                "properties": {
                    "choice": {
                        "type": "string",
                        "enum": [kind for kind in ACTION_KINDS if kind in accepted],
                        "description": "The kind of interaction.",
                    },
                    "content": {
                        "type": "string",
                        "description": "The content of the interaction (ignored for finish).",
                    },
                },
                "required": ["choice", "content"],
            },
        },
    }


def cap_action(action: Any, max_bytes: int = AGENT_TEXT_MAX_BYTES) -> tuple[Any, int | None]:
    """``action`` with its text cut to ``max_bytes`` UTF-8 bytes, and its size in bytes before the cut.

    The size is ``None`` when the action fits (it is then returned as it is). A string is measured
    and cut as it is. A tool-call dict is measured as its JSON text; over the cap it keeps only its
    ``choice`` and ``content`` (a non-string one written as JSON, as the grammar reads it), the choice
    cut to the cap and the content to what the choice leaves. Any other value is returned as it is:
    the grammar refuses it. Every string is cleaned first (:func:`~mimesis_gym.core.text.clean_json`).
    """
    action = clean_json(action)
    if isinstance(action, str):
        cut = truncate_utf8(action, max_bytes)
        return (action, None) if cut is action else (cut, len(action.encode("utf-8")))
    if not isinstance(action, Mapping):
        return action, None
    if _surely_fits(action, max_bytes):  # the usual small tool call: no JSON text built on every step
        return action, None
    size = len(json.dumps(action, ensure_ascii=False, default=str).encode("utf-8"))
    if size <= max_bytes:
        return action, None
    capped: dict[str, str] = {}
    budget = max_bytes
    for key in ("choice", "content"):
        if key in action:
            value = action[key]
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
            capped[key] = truncate_utf8(text, budget)
            budget -= len(capped[key].encode("utf-8"))
    return capped, size


def _surely_fits(action: Mapping[Any, Any], max_bytes: int) -> bool:
    """Whether a dict of string keys and string, number, bool or ``None`` values fits in ``max_bytes`` as
    JSON text, told from the strings' lengths alone (at most 6 bytes per character, a control character's
    escape; quotes and separators in a 16-byte allowance per item); ``False`` means "measure it"."""
    chars = 0
    for key, value in action.items():
        if not isinstance(key, str):
            return False
        if isinstance(value, str):
            chars += len(key) + len(value)
        elif value is None or isinstance(value, (bool, float)) or (isinstance(value, int) and abs(value) < 1 << 63):
            chars += len(key) + 32  # the longest float or 64-bit int written as JSON is shorter
        else:
            return False
    return chars * 6 + 16 * len(action) <= max_bytes


def parse_action(
    action: Any,
    accepted: Collection[str],
    tolerated: Mapping[str, str] | None = None,
    userrl: UserRLReading | None = None,
) -> ParsedAction | MalformedAction:
    """Parse one agent action against the kinds an env accepts.

    ``tolerated`` maps a kind the env does not accept to the kind it is handled as. A dict, or a
    string whose stripped form starts with ``{`` and parses as a JSON object, is a tool call and is
    turned into its canonical string first. ``userrl`` (the env's ``action_grammar="userrl"``) also
    accepts what :class:`UserRLReading` describes. Never raises.
    """
    parsed = _parse_native(action, accepted, tolerated, userrl is not None)
    if not isinstance(parsed, _Untagged):
        return parsed
    if userrl is None:
        return _malformed(parsed.reason, accepted, parsed.text)
    content = parsed.text[userrl.untagged_skip :].strip()
    return ParsedAction(kind=userrl.untagged_kind, tag="", content=content, canonical=parsed.text)


@dataclass(frozen=True, slots=True)
class _Untagged:
    """Text that starts with no tag of the grammar: malformed natively, read by a :class:`UserRLReading`."""

    reason: str
    text: str


def _parse_native(
    action: Any, accepted: Collection[str], tolerated: Mapping[str, str] | None, empty_content: bool
) -> ParsedAction | MalformedAction | _Untagged:
    """The native reading; ``empty_content`` accepts a tag with no content (UserRL's reading)."""
    if isinstance(action, Mapping):
        written = json.dumps(action, ensure_ascii=False, default=str)
        return _parse_tool_call(action, accepted, tolerated, written, empty_content)
    if not isinstance(action, str):
        text = str(action)
        return _malformed(
            f"an action must be a string or a tool-call dict, not {type(action).__name__}", accepted, text
        )
    stripped = action.strip()
    if stripped.startswith("{"):
        try:
            call = clean_json(json.loads(stripped))  # a lone-surrogate escape is legal JSON
        except (ValueError, RecursionError) as error:
            return _Untagged(f"it starts with '{{' but is not a valid JSON tool call ({error})", stripped)
        if isinstance(call, dict):
            return _parse_tool_call(call, accepted, tolerated, stripped, empty_content)
    return _parse_string(stripped, accepted, tolerated, stripped, empty_content)


def _parse_tool_call(
    call: Mapping[str, Any],
    accepted: Collection[str],
    tolerated: Mapping[str, str] | None,
    written: str,
    empty_content: bool,
) -> ParsedAction | MalformedAction | _Untagged:
    choice = call.get("choice")
    if choice not in ACTION_KINDS:
        shown = "missing" if choice is None else repr(choice)
        return _malformed(f"the tool call's choice is {shown}", accepted, written)
    if choice == "finish":
        return _parse_string("[finish]", accepted, tolerated, written, empty_content)
    content = call.get("content")
    if content is None:
        return _malformed(f"the tool call with choice {choice!r} has no content", accepted, written)
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    # UserRL's tool wrapper keeps content that already starts with the chosen tag as it is.
    text = content if content.startswith(f"[{choice}]") else f"[{choice}] {content}"
    return _parse_string(text.strip(), accepted, tolerated, written, empty_content)


def _parse_string(
    stripped: str,
    accepted: Collection[str],
    tolerated: Mapping[str, str] | None,
    written: str,
    empty_content: bool,
) -> ParsedAction | MalformedAction | _Untagged:
    if not stripped:
        return _Untagged("the action is empty", written)
    if stripped[0] == "[":
        close = stripped.find("]")
        tag = stripped[: close + 1] if close != -1 else ""
        kind = _TAGS.get(tag)
        if kind is None:
            if tag.lower() in _TAGS:
                reason = f"tags are lower case: write {tag.lower()}, not {tag}"
            elif tag:
                reason = f"{tag} is not a tag of this environment"
            else:
                reason = "the tag is not closed with ']'"
            return _Untagged(reason, written)
        handled = kind
        if kind not in accepted:
            handled = (tolerated or {}).get(kind, "")
            if not handled:
                return _malformed(f"this environment does not accept {tag}", accepted, written)
        if kind == "finish":
            return ParsedAction(kind=handled, tag=kind, content="", canonical="[finish]")
        content = stripped[close + 1 :].strip()
        if not content and not empty_content:
            return _malformed(f"{tag} needs content after the tag", accepted, written)
        return ParsedAction(kind=handled, tag=kind, content=content, canonical=stripped)
    return _Untagged("it does not start with a tag", written)


def _malformed(reason: str, accepted: Collection[str], written: str) -> MalformedAction:
    return MalformedAction(
        reason=reason,
        message=f"Invalid action: {reason}. {grammar_help(accepted)}",
        transcript_text=written,
    )
