"""The agent protocol used by the evaluation runner."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from mimesis_gym.core.chat import ChatFailure, Usage

__all__ = ["Agent", "AgentTurn", "Conversation", "is_privileged", "text_turn"]


@dataclass
class Conversation:
    """The agent's side of one episode: the messages as sent and the env's tools.

    ``env_id`` is the public id of the env being played (e.g. ``mimesis/TelepathyGym-v0``), set by
    the runner for every agent. ``env`` is the env object itself, set only for privileged agents
    (those with a true ``privileged`` attribute, i.e. the oracle); every other agent sees ``None``.
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    env: Any = None
    turn: int = 0
    env_id: str = ""


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
    """Optional class attribute ``privileged: bool``: the runner hands such agents ``Conversation.env``."""

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


def is_privileged(agent: object) -> bool:
    """Whether ``agent`` may be handed the env object (``Conversation.env``): its ``privileged`` attribute."""
    return bool(getattr(agent, "privileged", False))


def text_turn(action: str | dict[str, Any]) -> AgentTurn:
    """The turn for a grammar action; the message text is ``[choice] content`` (or the plain text)."""
    text = action if isinstance(action, str) else f"[{action['choice']}] {action.get('content', '')}".strip()
    return AgentTurn(action=action, message={"role": "assistant", "content": text})
