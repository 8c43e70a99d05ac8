"""What a baseline strategy sees: the public side of one episode, rebuilt from the conversation.

A :class:`Dialogue` holds the env id the runner announced, the system prompt, the opening messages
and every past exchange (the agent's choice and content, and the feedback it got). Strategies are
pure functions of it, so the same conversation always gets the same next action.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mimesis_gym.agents.base import Conversation

__all__ = ["Action", "Dialogue", "Exchange"]

Action = str | dict[str, Any]
"""A grammar action: ``{"choice": …, "content": …}`` or a plain text message (tool-less envs)."""

_TAGGED = re.compile(r"^\[(\w+)\]\s?(.*)$", re.DOTALL)


@dataclass(frozen=True)
class Exchange:
    """One past turn: the agent's choice (``""`` for plain text), its content and the env's feedback."""

    choice: str
    content: str
    feedback: str


@dataclass(frozen=True)
class Dialogue:
    """The public record of an episode so far (never the env object or its hidden task)."""

    env_id: str
    system: str
    opening: str
    exchanges: tuple[Exchange, ...]

    @classmethod
    def from_conversation(cls, conv: Conversation) -> Dialogue:
        """Rebuild from ``conv.messages``: system, opening messages, then (assistant, feedback) pairs."""
        messages = conv.messages
        n_opening = len(messages) - 1 - 2 * conv.turn
        opening = "\n".join(str(m.get("content") or "") for m in messages[1 : 1 + n_opening] if m["role"] == "user")
        exchanges = []
        for index in range(1 + n_opening, len(messages) - 1, 2):
            said = str(messages[index].get("content") or "")
            match = _TAGGED.match(said)
            choice, content = (match.group(1), match.group(2)) if match else ("", said)
            exchanges.append(Exchange(choice, content, str(messages[index + 1].get("content") or "")))
        return cls(
            env_id=conv.env_id,
            system=str(messages[0].get("content") or ""),
            opening=opening,
            exchanges=tuple(exchanges),
        )

    def of(self, choice: str) -> list[Exchange]:
        """The past exchanges of one choice, oldest first."""
        return [e for e in self.exchanges if e.choice == choice]
