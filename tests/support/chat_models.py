"""Chat models for unit tests of the role machinery: real implementations of the protocol that
answer from a script instead of a network, so each test states exactly what the model said."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from mimesis_gym.core.chat import ChatFailure, ChatReply, current_call_context


class ScriptedChatModel:
    """Answers each call with the next reply of ``replies`` (the last one repeats).

    A reply is a ``ChatReply``, a string (the utterance), or an exception instance to raise.
    Every call is recorded with its arguments and the call context.
    """

    def __init__(self, replies: Sequence[Any], name: str = "scripted-test-model", suspend: bool = True) -> None:
        self.replies = list(replies)
        self.name = name
        self.suspend = suspend
        self.calls: list[dict[str, Any]] = []
        self.closed = 0

    async def chat(self, messages, *, max_tokens, temperature, seed, json_keys=None) -> ChatReply:
        if self.suspend:
            await asyncio.sleep(0.001)  # a real backend suspends: exercise the event-loop path
        context = current_call_context()
        self.calls.append(
            {
                "messages": [dict(m) for m in messages],
                "max_tokens": max_tokens,
                "temperature": temperature,
                "seed": seed,
                "json_keys": json_keys,
                "episode_id": context.episode_id,
                "role": context.role,
                "turn": context.turn,
            }
        )
        reply = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, str):
            return ChatReply(text=reply)
        return reply

    async def aclose(self) -> None:
        self.closed += 1


def refusal() -> ChatReply:
    return ChatReply(failure=ChatFailure("refusal", "I can't help with that", attempts=2))


class RecordingChatModel:
    """Forwards every call to ``inner`` and records the request and the reply (a thin wrapper)."""

    def __init__(self, inner) -> None:
        self.inner = inner
        self.name = getattr(inner, "name", "recorded")
        self.calls: list[dict[str, Any]] = []

    async def chat(self, messages, *, max_tokens, temperature, seed, json_keys=None) -> ChatReply:
        reply = await self.inner.chat(
            messages, max_tokens=max_tokens, temperature=temperature, seed=seed, json_keys=json_keys
        )
        context = current_call_context()
        self.calls.append(
            {
                "messages": messages,
                "max_tokens": max_tokens,
                "json_keys": json_keys,
                "role": context.role,
                "reply": reply,
            }
        )
        return reply
