"""Your own corpus: one conversation a line, in the OpenAI/OASST or the ShareGPT shape.

- OpenAI/OASST: ``{"id"?, "goal"?, "messages": [{"role": "user" | "assistant" | "system",
  "content": str}, ...]}`` (``"turns"`` is read as ``"messages"``);
- ShareGPT: ``{"id"?, "goal"?, "conversations": [{"from": "human" | "gpt" | "system", "value": str}, ...]}``.

Either role vocabulary is understood in either shape. System messages are not part of the
conversation: each is skipped and counted (``"system message"``). ``goal`` (a string) describes
what the user wanted (``goal_kind="description"``); without it the first user turn is the goal.
``id`` (a string or an integer) names the conversation; without it, its line number does. Blank lines
are ignored; any other line that is not a JSON object of one of these shapes is ``"malformed line"``,
and the first such line's number and fault are kept in :attr:`CorpusLoad.first_seen`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from mimesis_gym.corpora.assemble import CorpusLoad, Malformed, Message, Parsed, assemble_lines
from mimesis_gym.corpora.conversation import Role

__all__ = ["load"]

_SHAPES = (("messages", "role", "content"), ("turns", "role", "content"), ("conversations", "from", "value"))
"""(list key, role key, text key) of each shape, tried in this order."""
_ROLES: dict[str, Role | Literal["system"]] = {
    "user": "user",
    "human": "user",
    "assistant": "assistant",
    "gpt": "assistant",
    "system": "system",
}


def load(path: Path, source: str | None = None) -> CorpusLoad:
    """The conversations of the JSON-lines file at ``path``; ``source`` defaults to the file's stem
    (``my_chats.jsonl`` → ``my_chats``), which with each id decides the dev/test split."""
    return assemble_lines(source or path.name.removesuffix(".gz").removesuffix(".jsonl"), path, _parse)


def _parse(record: object, number: int) -> Parsed:
    """``(id, messages, goal)`` of one line; :class:`Malformed` when it is of no known shape."""
    if not isinstance(record, dict):
        raise Malformed("not a JSON object")
    shape = next((shape for shape in _SHAPES if shape[0] in record), None)
    if shape is None:
        raise Malformed('no "messages", "turns" or "conversations" list')
    key, role_key, text_key = shape
    items = record[key]
    if not isinstance(items, list):
        raise Malformed(f'"{key}" is not a list')
    messages = [_message(item, role_key, text_key) for item in items]
    return _id(record.get("id"), number), messages, _goal(record.get("goal"))


def _message(item: object, role_key: str, text_key: str) -> Message:
    if not isinstance(item, dict):
        raise Malformed("a message is not an object")
    role = item.get(role_key)
    if not isinstance(role, str) or role not in _ROLES:
        raise Malformed(f"{role_key} {role!r} is not one of {', '.join(_ROLES)}")
    text = item.get(text_key)
    if not isinstance(text, str):
        raise Malformed(f"a {text_key} is not a string")
    return Message(_ROLES[role], text)


def _id(value: object, number: int) -> str:
    if value is None:
        return str(number)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or value == "":
        raise Malformed("id is neither a non-empty string nor an integer")
    return str(value)


def _goal(value: object) -> str | None:
    if value is not None and not isinstance(value, str):
        raise Malformed("goal is not a string")
    return value
