"""Human conversations as this library reads them, whatever corpus they come from (docs/humans.md).

A :class:`HumanConversation` is a list of alternating :class:`HumanTurn` s (consecutive messages of
one side are joined into one turn) with the goal the user had. Which half of a corpus a conversation
belongs to, ``dev`` or ``test``, is decided by :func:`split_of` from its source and id alone, so the
halves are the same on every machine, for every reader (the scorecard simulates on ``test`` and
compares with ``dev``; Stage I training reads only ``dev``) and never change when a corpus grows.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

__all__ = ["SPLITS", "GoalKind", "HumanConversation", "HumanTurn", "Role", "Split", "split_of"]

Role = Literal["user", "assistant"]
Split = Literal["dev", "test"]
GoalKind = Literal["description", "first_message"]
SPLITS: tuple[Split, ...] = ("dev", "test")


def split_of(source: str, conv_id: str) -> Split:
    """``dev`` or ``test``: the parity of the first byte of ``sha256("<source>/<conv_id>")``.

    Depends only on the two strings, so it is stable across machines, orders and corpus versions."""
    digest = hashlib.sha256(f"{source}/{conv_id}".encode()).digest()
    return "dev" if digest[0] % 2 == 0 else "test"


@dataclass(frozen=True, slots=True)
class HumanTurn:
    """One turn of a real conversation: the ``user`` (the human under study) or the ``assistant``
    (whoever answered them: an AI assistant, a tutor, a support agent, another person)."""

    role: Role
    text: str
    reason: str | None = None
    """The user's own reason for writing this message (ThoughtTrace), when the corpus has one."""
    reaction: str | None = None
    """The user's own reaction to this assistant reply (ThoughtTrace), when the corpus has one."""


@dataclass(frozen=True, slots=True)
class HumanConversation:
    """A real conversation and the goal its user had.

    ``goal_kind`` says where the goal comes from: ``description`` (the corpus describes the task,
    as OASST1's MirrorBench descriptions do) or ``first_message`` (no description: the goal is the
    user's first message, so a replay gives that message and simulates from the second user turn on).
    ``turns`` alternate roles; the first may be either side's.
    """

    source: str
    conv_id: str
    goal: str
    goal_kind: GoalKind
    turns: tuple[HumanTurn, ...]

    @property
    def id(self) -> str:
        """``<source>/<conv_id>``: unique across corpora (the replay env's task id)."""
        return f"{self.source}/{self.conv_id}"

    @property
    def split(self) -> Split:
        return split_of(self.source, self.conv_id)

    @property
    def user_texts(self) -> list[str]:
        """The user's messages, in order."""
        return [turn.text for turn in self.turns if turn.role == "user"]
