"""The action grammar as a decoding constraint (docs/evaluation.md, "Constrained actions").

Local agents decode under :func:`action_lark`: exactly one tagged line ``[<choice>] <content>`` (or
``[finish]``) for the choices of the env's ``interact_with_env`` tool, then the stop token. The tagged
line is preferred over the tool-call JSON because it is what the grammar note in the system prompt
asks for, it needs no escaping and few tokens (the main job allows 64 per turn: a JSON call cut there
is invalid, a tagged line cut there is still an action), and :func:`~mimesis_gym.agents.grammar.parse_agent_text`
reads it back unchanged. Content never contains ``<`` so it cannot open a ``<tool_call>`` or think block
that the parser would read first.

HTTP agents ask the server for structured outputs instead: :func:`action_json_schema` is the
``{"choice", "content"}`` object the env also accepts as a tool call written as text.
"""

from __future__ import annotations

import json
from typing import Any

from mimesis_gym.agents.grammar import allowed_choices
from mimesis_gym.core.constrained import GrammarConstraint, grammar_constraint

__all__ = ["action_constraint", "action_json_schema", "action_lark"]

CONTENT_PATTERN = r"[^\s<][^\n<]*"
"""A tagged line's content: starts with a visible character, no newline, no ``<``."""


def action_lark(tools: list[dict[str, Any]]) -> str:
    """The Lark grammar of one action line for the env's tools; ``ValueError`` when they have no choices."""
    choices = allowed_choices(tools)
    if not choices:
        raise ValueError("the env's tools name no choices: there is no action grammar to constrain to")
    alternatives = []
    tagged = [choice for choice in choices if choice != "finish"]
    if tagged:
        tags = " | ".join(json.dumps(f"[{choice}] ") for choice in tagged)
        alternatives.append(f"({tags}) CONTENT")
    if "finish" in choices:
        alternatives.append('"[finish]"')
    return f"start: {' | '.join(alternatives)}\nCONTENT: /{CONTENT_PATTERN}/\n"


def action_constraint(tokenizer: Any, tools: list[dict[str, Any]]) -> GrammarConstraint:
    """A fresh constraint (one per generation) holding a completion to one action line for ``tools``."""
    return grammar_constraint(tokenizer, action_lark(tools))


def action_json_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """The JSON schema of ``{"choice": <one of the env's choices>, "content": <text>}``."""
    choices = allowed_choices(tools)
    if not choices:
        raise ValueError("the env's tools name no choices: there is no action schema to constrain to")
    return {
        "type": "object",
        "properties": {"choice": {"type": "string", "enum": choices}, "content": {"type": "string"}},
        "required": ["choice", "content"],
        "additionalProperties": False,
    }
