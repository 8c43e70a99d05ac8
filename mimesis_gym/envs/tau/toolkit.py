"""Tool schemas, argument validation, dispatch and the tool list text (docs/envs/tau.md, "Tools").

A :class:`Tool` is a name, a one-line description, a parameter schema and a function
``run(db, **arguments) -> str`` over an :class:`~mimesis_gym.envs.tau.db.EpisodeDB`. Arguments are
validated against the schema before anything runs (missing, unexpected or wrongly typed argument →
``Error: ...``, database untouched); a function reports a failed precondition as ``Error: ...``
and changes nothing. Arguments are deep-copied before a tool sees them, so what a tool stores never
aliases the caller's data (the gold actions of a task stay pristine).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_gym.envs.tau.calc import calculate
from mimesis_gym.envs.tau.db import EpisodeDB, copy_json

__all__ = [
    "COMMON_TOOLS",
    "TRANSFER_TOOL",
    "Param",
    "Tool",
    "call_tool",
    "check_arguments",
    "tool_list_text",
]

TRANSFER_TOOL = "transfer_to_human_agents"


@dataclass(frozen=True, slots=True)
class Param:
    """One argument (or array element, or object field) of a tool.

    ``kind``: ``string``, ``integer`` (an int, never a bool), ``number`` (int or float), ``array``
    (elements of type ``items``) or ``object`` (``fields`` are its required keys; extra keys are
    allowed and kept). ``choices`` restricts a string to a fixed set.
    """

    name: str
    kind: str
    description: str = ""
    items: Param | None = None
    fields: tuple[Param, ...] = ()
    choices: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Tool:
    name: str
    description: str
    params: tuple[Param, ...]
    run: Callable[..., str]


_KIND_WORDS = {
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "array": "an array",
    "object": "an object",
}


def _type_error(path: str, param: Param, value: Any) -> str | None:
    kind = param.kind
    if kind == "string":
        ok = isinstance(value, str)
    elif kind == "integer":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "number":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif kind == "array":
        ok = isinstance(value, list)
    elif kind == "object":
        ok = isinstance(value, dict)
    else:  # pragma: no cover - a schema bug
        raise ValueError(f"unknown parameter kind {kind!r}")
    if not ok:
        return f"{path} must be {_KIND_WORDS[kind]}, got {_json_type(value)}"
    if param.choices and value not in param.choices:
        return f"{path} must be one of {', '.join(param.choices)}, got {value!r}"
    if kind == "array" and param.items is not None:
        for index, element in enumerate(value):
            problem = _type_error(f"{path}[{index}]", param.items, element)
            if problem:
                return problem
    if kind == "object":
        for field in param.fields:
            if field.name not in value:
                return f"{path} is missing the key '{field.name}'"
            problem = _type_error(f"{path}.{field.name}", field, value[field.name])
            if problem:
                return problem
    return None


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def check_arguments(tool: Tool, arguments: Mapping[str, Any]) -> str | None:
    """The first schema violation as an error message (without ``Error: ``), or ``None``."""
    names = {param.name for param in tool.params}
    for param in tool.params:
        if param.name not in arguments:
            return f"missing argument '{param.name}' of {tool.name}"
    for name in arguments:
        if name not in names:
            return f"unexpected argument '{name}' of {tool.name}"
    for param in tool.params:
        problem = _type_error(f"argument '{param.name}'", param, arguments[param.name])
        if problem:
            return problem
    return None


def call_tool(tools: Mapping[str, Tool], db: EpisodeDB, name: str, arguments: Mapping[str, Any]) -> str:
    """Run one call: validation, then the tool on a private copy of the arguments."""
    tool = tools[name]
    problem = check_arguments(tool, arguments)
    if problem:
        return f"Error: {problem}"
    return tool.run(db, **copy_json(dict(arguments)))


def tool_list_text(tools: Sequence[Tool]) -> str:
    """``Available Tools:`` then each tool (sorted by name) with its parameters."""
    lines = ["Available Tools:"]
    for tool in sorted(tools, key=lambda t: t.name):
        lines.append(f"- {tool.name}: {tool.description}")
        if tool.params:
            lines.append("  Parameters:")
            lines.extend(f"    - {param.name}: {param.description}" for param in tool.params)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Tools of both domains


def _calculate(db: EpisodeDB, expression: str) -> str:
    return calculate(expression)


def _think(db: EpisodeDB, thought: str) -> str:
    return ""


def _transfer(db: EpisodeDB, summary: str) -> str:
    return "Transfer successful"


COMMON_TOOLS: tuple[Tool, ...] = (
    Tool(
        "calculate",
        "Evaluate an arithmetic expression (numbers, + - * / and parentheses) and return the result "
        "rounded to 2 decimals.",
        (Param("expression", "string", "the expression, e.g. '2 * (3.5 + 4)'"),),
        _calculate,
    ),
    Tool(
        "think",
        "Write down your reasoning; nothing is looked up or changed and the result is empty.",
        (Param("thought", "string", "your reasoning"),),
        _think,
    ),
    Tool(
        TRANSFER_TOOL,
        "Hand the customer over to a human agent with a summary of the issue. Use it only when the "
        "request cannot be handled with the other tools. It ends the conversation.",
        (Param("summary", "string", "a short summary of the customer's issue"),),
        _transfer,
    ),
)
