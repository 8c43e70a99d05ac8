"""``LimitedModel``: a shared user or judge chat model behind a semaphore, recording its calls.

The runner wraps every user and judge model of a run in one, so role calls of all episodes share
the run's limit on calls in flight, and afterwards reads each episode's calls (role, turn, reply,
the JSON coercion tier) to fill the record's usage and user failures. The health check uses the
same recorder for its one-step probes.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Any

from mimesis_gym.core.chat import ChatReply, current_call_context
from mimesis_gym.core.jsonfix import JSONCoercionError, coerce_json

__all__ = ["LimitedModel"]


class LimitedModel:
    """A chat model behind ``semaphore``; ``calls[episode_id]`` lists ``(role, turn, reply, json tier)``.

    Other attributes are the wrapped model's.
    """

    def __init__(self, model: Any, semaphore: asyncio.Semaphore) -> None:
        self.model = model
        self.semaphore = semaphore
        self.calls: dict[str, list[tuple[str, int, ChatReply, int | None]]] = defaultdict(list)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.model, name)

    async def chat(self, messages: list[dict[str, Any]], **kwargs: Any) -> ChatReply:
        async with self.semaphore:
            reply = await self.model.chat(messages, **kwargs)
        context = current_call_context()
        tier = None
        if kwargs.get("json_keys") and reply.failure is None:
            try:
                tier = coerce_json(reply.text, kwargs["json_keys"]).tier
            except JSONCoercionError:
                tier = None
        self.calls[context.episode_id or ""].append((context.role or "?", context.turn, reply, tier))
        return reply
