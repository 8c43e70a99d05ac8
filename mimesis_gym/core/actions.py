"""The action grammar shared by the agent-facing envs (docs/env-contract.md, "The action grammar").

An action is ``[action] text``, ``[search] text``, ``[answer] text`` or ``[finish]``, or the
equivalent tool call ``interact_with_env(choice, content)`` given as a dict or its JSON (content that
already starts with the chosen tag, e.g. ``content="[answer] -16"``, is kept as it is). Parsing
never raises: input that does not fit the grammar becomes a :class:`MalformedAction` whose
``message`` says exactly what was wrong and what the grammar is; the env spends the turn on it.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any

from mimesis_gym.core.text import AGENT_TEXT_MAX_BYTES, clean_json, truncate_utf8

__all__ = [
    "ACTION_KINDS",
    "MalformedAction",
    "ParsedAction",
    "cap_action",
    "grammar_help",
    "interact_with_env_tool",
    "parse_action",
]

ACTION_KINDS: tuple[str, ...] = ("action", "search", "answer", "finish")
"""Every tag of the grammar, in the order the help text lists them."""

_TAGS = {f"[{kind}]": kind for kind in ACTION_KINDS}


@dataclass(frozen=True, slots=True)
class ParsedAction:
    """A well-formed action.

    ``tag`` is the kind written by the agent, ``kind`` the kind the env handles it as (they differ
    only for a tolerated alias, e.g. TurtleGym's ``[search]`` handled as ``action``). ``canonical``
    is the action's canonical string, which the transcript records.
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
) -> ParsedAction | MalformedAction:
    """Parse one agent action against the kinds an env accepts.

    ``tolerated`` maps a kind the env does not accept to the kind it is handled as. A dict, or a
    string whose stripped form starts with ``{`` and parses as a JSON object, is a tool call and is
    turned into its canonical string first. Never raises.
    """
    if isinstance(action, Mapping):
        return _parse_tool_call(action, accepted, tolerated, json.dumps(action, ensure_ascii=False, default=str))
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
            return _malformed(f"it starts with '{{' but is not a valid JSON tool call ({error})", accepted, stripped)
        if isinstance(call, dict):
            return _parse_tool_call(call, accepted, tolerated, stripped)
    return _parse_string(stripped, accepted, tolerated, stripped)


def _parse_tool_call(
    call: Mapping[str, Any],
    accepted: Collection[str],
    tolerated: Mapping[str, str] | None,
    written: str,
) -> ParsedAction | MalformedAction:
    choice = call.get("choice")
    if choice not in ACTION_KINDS:
        shown = "missing" if choice is None else repr(choice)
        return _malformed(f"the tool call's choice is {shown}", accepted, written)
    if choice == "finish":
        return _parse_string("[finish]", accepted, tolerated, written)
    content = call.get("content")
    if content is None:
        return _malformed(f"the tool call with choice {choice!r} has no content", accepted, written)
    if not isinstance(content, str):
        content = json.dumps(content, ensure_ascii=False)
    # UserRL's tool wrapper keeps content that already starts with the chosen tag as it is.
    text = content if content.startswith(f"[{choice}]") else f"[{choice}] {content}"
    return _parse_string(text.strip(), accepted, tolerated, written)


def _parse_string(
    stripped: str,
    accepted: Collection[str],
    tolerated: Mapping[str, str] | None,
    written: str,
) -> ParsedAction | MalformedAction:
    if not stripped:
        return _malformed("the action is empty", accepted, written)
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
            return _malformed(reason, accepted, written)
        handled = kind
        if kind not in accepted:
            handled = (tolerated or {}).get(kind, "")
            if not handled:
                return _malformed(f"this environment does not accept {tag}", accepted, written)
        if kind == "finish":
            return ParsedAction(kind=handled, tag=kind, content="", canonical="[finish]")
        content = stripped[close + 1 :].strip()
        if not content:
            return _malformed(f"{tag} needs content after the tag", accepted, written)
        return ParsedAction(kind=handled, tag=kind, content=content, canonical=stripped)
    return _malformed("it does not start with a tag", accepted, written)


def _malformed(reason: str, accepted: Collection[str], written: str) -> MalformedAction:
    return MalformedAction(
        reason=reason,
        message=f"Invalid action: {reason}. {grammar_help(accepted)}",
        transcript_text=written,
    )
