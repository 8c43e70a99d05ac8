"""HumanReplay's one role: the user under test, writing the next user turn of a real conversation.

See docs/humans.md, "The replay protocol". The user sees the goal and the real history so far (its
own earlier turns are the human's, the other side's are the real replies) and writes the next
message, or :data:`END_MARKER` alone to end the conversation there.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from mimesis_gym.core.chat import ChatFailure, ChatModel, ChatReply, ThoughtRecord
from mimesis_gym.core.conventions import DEFAULT_OPENER, has_think_tag, role_messages, split_thought
from mimesis_gym.core.roles import LLMRole, RoleResult, RoleSession, ScriptedRole

__all__ = [
    "END_MARKER",
    "END_MARKERS",
    "LLMReplayUser",
    "ScriptedReplayUser",
    "Twin",
    "counterpart_of",
    "read_end",
    "replay_messages",
    "user_system_prompt",
]

END_MARKER = "###STOP###"
END_MARKERS = (END_MARKER, "<|endconversation|>")
"""Texts that end the conversation in a user's reply: ours, and UserLM's end token."""

COUNTERPARTS = {
    "simulatorarena-math": "a tutor helping you with a math problem",
    "chitchat": "another person, a stranger you were paired with in an online chat",
    "abcd": "a customer-service agent of an online clothing store",
}
DEFAULT_COUNTERPART = "an AI assistant"

USER_SYSTEM = """\
You are a real person in a chat with {counterpart}. You write as yourself; the other side answers you.

{goal_section}

Write your next message exactly as you would type it: only the message, in your own words and \
style, without describing yourself or the conversation. If you would end the conversation at this \
point instead (you got what you came for, or you gave up), reply with {end} alone."""

GOAL_DESCRIPTION = "What you want from this conversation:\n{goal}"
GOAL_FIRST_MESSAGE = "You opened the conversation with the first message below; it says what you wanted."


def counterpart_of(source: str) -> str:
    """Who the user talks with in ``source`` (an AI assistant unless the corpus says otherwise)."""
    return COUNTERPARTS.get(source, DEFAULT_COUNTERPART)


def user_system_prompt(goal: str, goal_kind: str, source: str) -> str:
    """The user's system message for a conversation's goal."""
    section = GOAL_DESCRIPTION.format(goal=goal) if goal_kind == "description" else GOAL_FIRST_MESSAGE
    return USER_SYSTEM.format(counterpart=counterpart_of(source), goal_section=section, end=END_MARKER)


def replay_messages(goal: str, goal_kind: str, source: str, history: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    """The user's chat for one position: :func:`user_system_prompt`, then the history with the user's
    own turns as ``assistant`` and the other side's as ``user`` (``role_messages``). Before any turn
    (the human opens) the other side's :data:`~mimesis_gym.core.conventions.DEFAULT_OPENER` stands in,
    as it does in every later position and in the user-side SFT lines, so the model always answers a
    ``user`` message."""
    turns = list(history) or [("other", DEFAULT_OPENER)]
    return role_messages(user_system_prompt(goal, goal_kind, source), turns)


def read_end(text: str) -> tuple[str, bool]:
    """``(message, ended)``: the reply without any end marker, and whether one was there."""
    ended = False
    for marker in END_MARKERS:
        if marker in text:
            ended = True
            text = text.replace(marker, " ")
    return " ".join(text.split()) if ended else text.strip(), ended


@dataclass(frozen=True, slots=True)
class Twin:
    """What the user under test wrote at one user position of a replayed conversation."""

    text: str
    ended: bool
    thought: str | None = None


class LLMReplayUser(LLMRole[Twin]):
    """The user under test answered by a chat model: plain text; :data:`END_MARKER` ends.

    Materials: ``goal``, ``goal_kind``, ``source`` and ``history`` (``(speaker, text)`` pairs,
    ``"self"`` for the user's own — the human's — earlier turns, ``"other"`` for the real replies).
    A failed call's fallback is an empty, unended twin (reported apart by the scorecard).
    """

    name: ClassVar[str] = "user"
    json_keys: ClassVar[tuple[str, ...] | None] = None

    def __init__(self, model: ChatModel, *, max_tokens: int = 512, temperature: float = 0.0) -> None:
        super().__init__(model)
        self.max_tokens = max_tokens
        self.temperature = temperature

    def build_messages(
        self, *, goal: str, goal_kind: str, source: str, history: Sequence[tuple[str, str]] = (), **_: Any
    ) -> list[dict[str, Any]]:
        return replay_messages(goal, goal_kind, source, history)

    def parse(self, reply: ChatReply, parsed: dict[str, Any] | None, **_: Any) -> Twin:
        text, ended = read_end(reply.text)
        return Twin(text, ended, reply.thought)

    def fallback(self, **_: Any) -> Twin:
        return Twin("", False)

    async def __call__(self, session: RoleSession, **materials: Any) -> RoleResult[Twin]:
        result = await super().__call__(session, **materials)
        if result.failed or not has_think_tag(result.value.text):
            return result
        # a chat model strips think blocks itself (docs/users.md); this covers one that did not
        text, thought = split_thought(result.value.text)
        if thought:
            session.thought_records.append(ThoughtRecord(session.turn, self.name, session.call_index - 1, thought))
        if not text and not result.value.ended:
            session.fail(self.name, ChatFailure("empty_after_think", "only a thought came back"))
            return RoleResult(self.fallback(), failed=True, thought=thought)
        return RoleResult(Twin(text, result.value.ended, thought), thought=thought, utterance=text)


TEMPLATE_FOLLOW_UPS = (
    "Thanks, that helps.",
    "Can you explain that in more detail?",
    "OK. What else should I know?",
)
TEMPLATE_TURNS = 4
"""The template user ends at its fourth position."""


class ScriptedReplayUser(ScriptedRole[Twin]):
    """The template user (``user="scripted"``), the scorecard's floor row: opens with the goal's first
    sentence (it is asked to open only when the goal is a description), then cycles through
    :data:`TEMPLATE_FOLLOW_UPS`, and ends at position :data:`TEMPLATE_TURNS`. It never reads the
    history: a fixed script, as a template user is."""

    name: ClassVar[str] = "user"

    def decide(self, *, goal: str, goal_kind: str, position: int, **_: Any) -> Twin:
        if position >= TEMPLATE_TURNS:
            return Twin("", True)
        if position == 1:
            first = goal.split(". ")[0].rstrip(".")
            return Twin(f"Hi. {first}.", False)
        return Twin(TEMPLATE_FOLLOW_UPS[(position - 2) % len(TEMPLATE_FOLLOW_UPS)], False)
