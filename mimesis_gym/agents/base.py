"""The agent protocol used by the evaluation runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from mimesis_gym.core.chat import ChatFailure, Usage

__all__ = ["Agent", "AgentTurn", "Conversation"]


@dataclass
class Conversation:
    """The agent's side of one episode: the messages as sent and the env's tools.

    ``env`` is set by the runner for privileged agents (the oracle) and ignored by the others.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    env: Any = None
    turn: int = 0


@dataclass
class AgentTurn:
    """One agent decision: the action for ``env.step`` and the assistant message for the history."""

    action: str | dict[str, Any]
    message: dict[str, Any]
    usage: Usage = field(default_factory=Usage)
    failure: ChatFailure | None = None
    prompt_ids: list[int] | None = None
    completion_ids: list[int] | None = None
    logprobs: list[float] | None = None
    constrained: bool = False
    """The completion was decoded under the action grammar; ``logprobs`` are the constrained distribution's."""
    end: bool = False
    """The agent ends the episode here (no tool call under ``on_no_tool_call="end"``)."""


class Agent(Protocol):
    name: str

    def start(
        self, system: str, tools: list[dict[str, Any]], opening_messages: list[dict[str, Any]]
    ) -> Conversation: ...

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn: ...

    def observe(self, conv: Conversation, turn: AgentTurn, feedback: str) -> None: ...


class TextAgent:
    """Shared history handling for agents whose actions are written as text (grammar turns)."""

    name = "agent"

    def start(self, system: str, tools: list[dict[str, Any]], opening_messages: list[dict[str, Any]]) -> Conversation:
        return Conversation(messages=[{"role": "system", "content": system}, *opening_messages], tools=tools)

    def observe(self, conv: Conversation, turn: AgentTurn, feedback: str) -> None:
        conv.messages.append(turn.message)
        conv.messages.append({"role": "user", "content": feedback})
        conv.turn += 1
