"""From a corpus's raw messages to :class:`HumanConversation` s, with a count of everything left out.

Every corpus adapter reads its file into :class:`Message` s and hands each conversation to an
:class:`Assembler`, which applies the rules all corpora share (docs/humans.md, "Corpora"):

- every text passes :func:`~mimesis_gym.core.text.clean_text` (it always encodes as UTF-8) and is
  otherwise kept verbatim;
- a message that is not a string, or is empty or blank, is skipped (``"not text"``, ``"empty text"``),
  and so is a system message (``"system message"``): it is not part of the conversation;
- consecutive messages of one side are joined with a newline into one turn (their reasons and
  reactions too), so turns alternate;
- a conversation without a user turn (``"no user turn"``), without a turn of the other side
  (``"no reply"``) or with an id seen before (``"duplicate id"``) is dropped;
- a conversation without a goal takes its first user turn as the goal (``goal_kind="first_message"``).

:func:`assemble_lines` reads a JSON-lines file, one conversation a line, through an adapter's parser;
a line that is not a conversation of the corpus's shape is ``"malformed line"``.

Nothing is left out silently: :class:`CorpusLoad` counts each reason and keeps where it first occurred.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from mimesis_gym.core.text import clean_json, clean_text
from mimesis_gym.corpora.conversation import HumanConversation, HumanTurn, Role

__all__ = [
    "Assembler",
    "CorpusLoad",
    "Malformed",
    "Message",
    "Parsed",
    "assemble_lines",
    "join_texts",
    "read_json",
    "read_text",
    "text_or_none",
]


class Message(NamedTuple):
    """One raw message as a corpus stores it; ``text`` is whatever the file holds (checked later).
    A ``system`` message is not part of the conversation: it is skipped (``"system message"``)."""

    role: Role | Literal["system"]
    text: object
    reason: str | None = None
    reaction: str | None = None


@dataclass(frozen=True, slots=True)
class CorpusLoad:
    """What reading one corpus file gave: its conversations and an account of what was left out.

    ``dropped`` counts whole conversations (or lines, records) left out, by reason; ``skipped`` counts
    messages left out of conversations, by reason (their reasons never overlap). ``first_seen`` names,
    for each reason of either, where it first occurred (``"line 3 (not JSON)"``, ``"conversation 3592"``).
    """

    source: str
    path: Path
    conversations: list[HumanConversation]
    dropped: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    first_seen: dict[str, str] = field(default_factory=dict)

    @property
    def user_turns(self) -> int:
        """How many user turns the kept conversations hold."""
        return sum(len(conversation.user_texts) for conversation in self.conversations)

    def summary(self) -> str:
        """One line: what was kept, what was dropped and skipped, and where each reason first occurred."""
        kept = f"{self.source}: {len(self.conversations)} conversations, {self.user_turns} user turns from {self.path}"
        return f"{kept}; dropped: {self._describe(self.dropped)}; skipped messages: {self._describe(self.skipped)}"

    def _describe(self, counts: dict[str, int]) -> str:
        if not counts:
            return "none"
        return ", ".join(f"{count} {reason} (first: {self.first_seen[reason]})" for reason, count in counts.items())


class Assembler:
    """Collects one corpus's conversations; :meth:`result` gives the :class:`CorpusLoad`."""

    def __init__(self, source: str, path: Path) -> None:
        self.source = source
        self.path = path
        self._conversations: list[HumanConversation] = []
        self._ids: set[str] = set()
        self._dropped: dict[str, int] = {}
        self._skipped: dict[str, int] = {}
        self._first_seen: dict[str, str] = {}

    def drop(self, reason: str, where: str) -> None:
        """Count a conversation (line, record) left out for ``reason``."""
        self._count(self._dropped, reason, where)

    def skip(self, reason: str, where: str) -> None:
        """Count a message left out of its conversation for ``reason``."""
        self._count(self._skipped, reason, where)

    def add(self, conv_id: str, messages: Iterable[Message], goal: str | None = None, where: str | None = None) -> None:
        """Build one conversation from its raw ``messages`` and keep it, or count why it is dropped.

        ``goal`` is the corpus's description of what the user wanted; ``None`` or blank makes the first
        user turn the goal. ``where`` locates the conversation in messages (default ``conversation <id>``).
        """
        where = where or f"conversation {conv_id}"
        turns = self._turns(messages, where)
        roles = {turn.role for turn in turns}
        if "user" not in roles:
            self.drop("no user turn", where)
        elif "assistant" not in roles:
            self.drop("no reply", where)
        elif conv_id in self._ids:
            self.drop("duplicate id", where)
        else:
            self._ids.add(conv_id)
            self._conversations.append(self._conversation(conv_id, goal, turns))

    def result(self) -> CorpusLoad:
        return CorpusLoad(
            source=self.source,
            path=self.path,
            conversations=list(self._conversations),
            dropped=dict(self._dropped),
            skipped=dict(self._skipped),
            first_seen=dict(self._first_seen),
        )

    def _count(self, counts: dict[str, int], reason: str, where: str) -> None:
        counts[reason] = counts.get(reason, 0) + 1
        self._first_seen.setdefault(reason, where)

    def _turns(self, messages: Iterable[Message], where: str) -> list[HumanTurn]:
        turns: list[HumanTurn] = []
        for message in messages:
            if message.role == "system":
                self.skip("system message", where)
                continue
            if not isinstance(message.text, str):
                self.skip("not text", where)
                continue
            text = clean_text(message.text)
            if not text.strip():
                self.skip("empty text", where)
                continue
            turn = HumanTurn(message.role, text, _clean(message.reason), _clean(message.reaction))
            if turns and turns[-1].role == turn.role:
                turns[-1] = _join(turns[-1], turn)
            else:
                turns.append(turn)
        return turns

    def _conversation(self, conv_id: str, goal: str | None, turns: list[HumanTurn]) -> HumanConversation:
        goal = _clean(goal)
        if goal is None:
            first = next(turn.text for turn in turns if turn.role == "user")
            return HumanConversation(self.source, conv_id, first, "first_message", tuple(turns))
        return HumanConversation(self.source, conv_id, goal, "description", tuple(turns))


class Malformed(ValueError):
    """A line or record that is not a conversation of the corpus's shape; the message says why."""


Parsed = tuple[str, list[Message], str | None]
"""One conversation as an adapter parsed it: ``(id, messages, goal)``."""


def assemble_lines(source: str, path: Path, parse: Callable[[object, int], Parsed]) -> CorpusLoad:
    """A JSON-lines corpus: ``parse(value, line number)`` each non-blank line; a line that is not JSON,
    or that ``parse`` rejects with :class:`Malformed`, is ``"malformed line"`` (``line N (why)``)."""
    assembler = Assembler(source, path)
    for number, record in _json_lines(path):
        try:
            if record is _NOT_JSON:
                raise Malformed("not JSON")
            conv_id, messages, goal = parse(record, number)
        except Malformed as fault:
            assembler.drop("malformed line", f"line {number} ({fault})")
            continue
        assembler.add(conv_id, messages, goal, f"line {number}")
    return assembler.result()


def _clean(text: str | None) -> str | None:
    """``text`` cleaned, or ``None`` when absent or blank."""
    if text is None or not text.strip():
        return None
    return clean_text(text)


def _join(first: HumanTurn, second: HumanTurn) -> HumanTurn:
    """Two consecutive messages of one side as one turn: texts, reasons and reactions joined by newlines."""
    return HumanTurn(
        first.role,
        f"{first.text}\n{second.text}",
        join_texts([first.reason, second.reason]),
        join_texts([first.reaction, second.reaction]),
    )


def text_or_none(value: object) -> str | None:
    """``value`` when it is a string, else ``None`` (a field a corpus may leave out or fill oddly)."""
    return value if isinstance(value, str) else None


def join_texts(texts: Iterable[str | None]) -> str | None:
    """The present, non-blank ``texts`` joined by newlines; ``None`` when there are none."""
    present = [text for text in texts if text is not None and text.strip()]
    return "\n".join(present) if present else None


def read_text(path: Path) -> str:
    """A corpus file's text (gunzipped when it ends in ``.gz``); bytes that are not UTF-8 become U+FFFD."""
    data = path.read_bytes()
    if path.suffix == ".gz":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as error:
            raise ValueError(f"{path}: not a readable gzip file ({error}); pass the corpus's own file") from None
    return clean_text(data)


def read_json(path: Path) -> Any:
    """A JSON corpus file, every string cleaned. ``ValueError`` naming the file when it is not JSON."""
    try:
        return clean_json(json.loads(read_text(path)))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not a JSON file ({error}); pass the corpus's own file") from None


_NOT_JSON = object()


def _json_lines(path: Path) -> Iterable[tuple[int, Any]]:
    """``(line number, value)`` of each non-blank line of a JSON-lines file, every string cleaned;
    a line that is not JSON gives ``(line number, _NOT_JSON)``."""
    for number, line in enumerate(read_text(path).split("\n"), start=1):  # not splitlines: U+2028 is text
        if not line.strip():
            continue
        try:
            yield number, clean_json(json.loads(line))
        except json.JSONDecodeError:
            yield number, _NOT_JSON
