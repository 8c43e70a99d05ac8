"""CSD teacher rows: the student's own ids with the coach's note as one extra user turn.

See docs/algorithms.md, "Teacher rows".

With ``p = a_s(t) − gen_prompt_len(t)`` (the end of the message ``y_t`` answers), the teacher row is
``ids[:p] + note_delta + ids[p : a_e(t)]``: the generation prompt and ``y_t`` keep their exact ids,
and ``y_t``'s teacher positions are the student positions shifted by the note delta's length.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mimesis_gym.algorithms.learners.csd.coach import note_message
from mimesis_gym.algorithms.records import Episode, Turn
from mimesis_gym.algorithms.render import ChatRenderer

__all__ = ["TeacherRow", "answers_tool_message", "build_teacher_row", "teacher_ids"]


def teacher_ids(ids: Sequence[int], turn: Turn, note_delta: Sequence[int]) -> list[int]:
    """``ids[:p] + note_delta + ids[p:a_e]`` for turn ``turn`` of a segment's ``ids``."""
    start, end = turn.action_span
    insert_at = start - turn.gen_prompt_len
    return [*ids[:insert_at], *note_delta, *ids[insert_at:end]]


@dataclass(frozen=True)
class TeacherRow:
    """One teacher input: ``input_ids`` and the teacher span of ``y_t`` (student span + ``shift``)."""

    rollout_id: str
    turn: int
    segment: int
    input_ids: list[int]
    shift: int
    student_span: tuple[int, int]

    @property
    def teacher_span(self) -> tuple[int, int]:
        return self.student_span[0] + self.shift, self.student_span[1] + self.shift


def answers_tool_message(episode: Episode, turn: Turn) -> bool:
    """Whether the message ``y_t`` answers is a tool message (the previous turn was a tool call)."""
    return turn.index > 1 and episode.turns[turn.index - 2].tool_call


def build_teacher_row(episode: Episode, turn: Turn, note: str, renderer: ChatRenderer) -> TeacherRow:
    """The teacher row of ``turn`` under ``note`` (the note wrapped by :func:`note_message`)."""
    delta = renderer.note_delta(note_message(note), after_tool=answers_tool_message(episode, turn))
    ids = teacher_ids(episode.segments[turn.segment].input_ids, turn, delta)
    return TeacherRow(episode.rollout_id, turn.index, turn.segment, ids, len(delta), turn.action_span)
