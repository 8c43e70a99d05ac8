"""Microsoft SimulatorArena (MIT): real users working with AI assistants, two tasks.

Each file is a JSON list of records with parallel lists ``user_queries`` and ``ai_responses``
(user message *i*, then the assistant's reply *i*).

- ``simulatorarena-doc`` (document creation, 51 conversations): the user picked a ``document_type``
  and an ``intent`` ("Apology Letter: Write a sincere letter ...") and, before chatting, answered
  questions about what the document should say (``bullet_points`` / ``bullet_points_responses``,
  the pre-writing notes). The goal is the type, the intent and the answered notes
  (``goal_kind="description"``); ratings and feedback stay out of it. Id: ``workerId``.
- ``simulatorarena-math`` (math tutoring, 50 conversations): a student asks a tutor for help with a
  MATH problem, then (in most records) with a similar second problem in the same chat. The problem
  texts were redacted from the release, so nothing describes the task: the goal is the student's
  first message (``goal_kind="first_message"``). Id: ``<workerId>-<problem_id>`` (one worker did two).
  One message is an uploaded image (a list, skipped as ``"not text"``) and two replies are missing.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import zip_longest
from pathlib import Path

from mimesis_gym.corpora.assemble import Assembler, CorpusLoad, Message, read_json, text_or_none

__all__ = ["DOC_SOURCE", "MATH_SOURCE", "load_doc", "load_math"]

DOC_SOURCE = "simulatorarena-doc"
MATH_SOURCE = "simulatorarena-math"


def load_doc(path: Path) -> CorpusLoad:
    """The document-creation conversations of ``document_creation_…json`` at ``path``."""
    return _load(path, DOC_SOURCE, lambda record: text_or_none(record.get("workerId")), _doc_goal)


def load_math(path: Path) -> CorpusLoad:
    """The math-tutoring conversations of ``math_tutoring_…json`` at ``path``."""
    return _load(path, MATH_SOURCE, _math_id, lambda record: None)


def _load(
    path: Path,
    source: str,
    conv_id: Callable[[dict], str | None],
    goal: Callable[[dict], str | None],
) -> CorpusLoad:
    """Read a SimulatorArena file; a record without an id or the two message lists is ``"malformed record"``."""
    records = read_json(path)
    if not isinstance(records, list):
        raise ValueError(f"{path}: expected a JSON list of SimulatorArena records, got {type(records).__name__}")
    assembler = Assembler(source, path)
    for number, record in enumerate(records, start=1):
        ident = conv_id(record) if isinstance(record, dict) else None
        if ident is None or not all(isinstance(record.get(key), list) for key in ("user_queries", "ai_responses")):
            assembler.drop("malformed record", f"record {number}")
            continue
        assembler.add(ident, _messages(record), goal(record))
    return assembler.result()


def _messages(record: dict) -> list[Message]:
    """User query *i* then AI response *i*, for every *i* (a missing one is ``None``, skipped as not text)."""
    messages = []
    for query, response in zip_longest(record["user_queries"], record["ai_responses"]):
        messages += [Message("user", query), Message("assistant", response)]
    return messages


def _math_id(record: dict) -> str | None:
    worker, problem = text_or_none(record.get("workerId")), record.get("problem_id")
    if worker is None or not isinstance(problem, (int, str)):
        return None
    return f"{worker}-{problem}"


def _doc_goal(record: dict) -> str | None:
    """The document type and intent, then the pre-writing questions the user answered with their answers."""
    kind, intent = text_or_none(record.get("document_type")), text_or_none(record.get("intent"))
    if kind is None or intent is None:
        return None
    lines = [f"Document type: {kind}.", f"Goal: {intent}"]
    questions, answers = _list(record.get("bullet_points")), _list(record.get("bullet_points_responses"))
    notes = [
        f"- {question.strip()} {answer.strip()}"
        for question, answer in zip(questions, answers, strict=False)  # a count mismatch keeps the pairs there are
        if isinstance(question, str) and isinstance(answer, str) and answer.strip()
    ]
    if notes:
        lines += ["Notes the user prepared before the chat (question, then their answer):", *notes]
    return "\n".join(lines)


def _list(value: object) -> list:
    return value if isinstance(value, list) else []
