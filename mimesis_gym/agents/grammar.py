"""The text-grammar fallback and the grammar note for models without tools."""

from __future__ import annotations

import json
import re
from typing import Any

from mimesis_gym.core.conventions import split_thought
from mimesis_gym.core.jsonfix import JSONCoercionError, coerce_json

__all__ = ["allowed_choices", "grammar_instructions", "parse_agent_text"]

_TAG_LINE = re.compile(r"^\s*\[(action|search|answer|finish)\]", re.MULTILINE)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def allowed_choices(tools: list[dict[str, Any]]) -> list[str]:
    """The ``choice`` enum of the env's ``interact_with_env`` tool (empty when tools are off)."""
    for tool in tools:
        properties = tool.get("function", {}).get("parameters", {}).get("properties", {})
        if "choice" in properties:
            return list(properties["choice"].get("enum", []))
    return []


def grammar_instructions(tools: list[dict[str, Any]]) -> str:
    """A short note describing the text grammar, appended to the system prompt of tool-less models."""
    choices = allowed_choices(tools)
    tags = ", ".join("[finish]" if c == "finish" else f"[{c}] <content>" for c in choices)
    return (
        "\n\nTo interact, write exactly one line that starts with one of these tags: "
        f"{tags}. For example: [{choices[0] if choices else 'action'}] your message."
    )


def parse_agent_text(text: str) -> str | dict[str, Any]:
    """The action in a completion: a ``<tool_call>`` JSON block, else the first tagged line onwards.

    Think blocks are stripped first. Without a tool call or a tag, the whole stripped text is the
    action (the env rejects it and the turn is spent).
    """
    utterance, _ = split_thought(text)
    call = _TOOL_CALL.search(utterance)
    if call is not None:
        try:
            data = coerce_json(call.group(1), ["name", "arguments"]).data
            arguments = data["arguments"]
            if isinstance(arguments, str):
                arguments = coerce_json(arguments, ["choice"]).data
            if isinstance(arguments, dict):
                return arguments
        except (JSONCoercionError, KeyError):
            pass
        return json.dumps(call.group(1).strip())
    match = _TAG_LINE.search(utterance)
    if match is None:
        return utterance.strip()
    return utterance[match.start() :].strip()
