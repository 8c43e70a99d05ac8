"""OpenAssistant (OASST1) conversations as SAP's MirrorBench prepared them (Apache-2.0).

One JSON object a line: ``conversation_id``, ``task_description`` (an LLM-written summary of what
the user wanted: the goal, ``goal_kind="description"``) and ``turns`` of ``{"role": "user" |
"assistant", "content": str}``. The shipped file holds 200 conversations with 366 user turns.
"""

from __future__ import annotations

from pathlib import Path

from mimesis_gym.corpora.assemble import CorpusLoad, Malformed, Message, Parsed, assemble_lines, text_or_none

__all__ = ["SOURCE", "load"]

SOURCE = "oasst1"
_ROLES = ("user", "assistant")


def load(path: Path) -> CorpusLoad:
    """The conversations of MirrorBench's ``oasst1_mirror.jsonl`` at ``path``.

    A line that is not a JSON object with a string ``conversation_id`` and a list of ``turns`` whose
    roles are ``user``/``assistant`` counts as ``"malformed line"``."""
    return assemble_lines(SOURCE, path, _parse)


def _parse(record: object, number: int) -> Parsed:
    if not isinstance(record, dict) or not isinstance(record.get("conversation_id"), str):
        raise Malformed("no conversation_id")
    turns = record.get("turns")
    if not isinstance(turns, list) or not all(isinstance(turn, dict) and turn.get("role") in _ROLES for turn in turns):
        raise Malformed("turns is not a list of user/assistant turns")
    messages = [Message(turn["role"], turn.get("content")) for turn in turns]
    return record["conversation_id"], messages, text_or_none(record.get("task_description"))
