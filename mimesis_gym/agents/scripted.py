"""Scripted baseline agents: ``scripted:noop``, ``scripted:random[:delay]``, ``oracle``."""

from __future__ import annotations

import asyncio
import random
from typing import Any

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent
from mimesis_gym.agents.grammar import allowed_choices

__all__ = ["NoopAgent", "OracleTextAgent", "RandomAgent"]

QUESTION = "Could you tell me a bit more about what you have in mind?"
ANSWER = "I am not sure."
CANNED = {
    "action": "Can you tell me more?",
    "search": "test",
    "answer": "I think it is something ordinary.",
    "finish": "",
}


def _turn(action: str | dict[str, Any]) -> AgentTurn:
    text = action if isinstance(action, str) else f"[{action['choice']}] {action.get('content', '')}".strip()
    return AgentTurn(action=action, message={"role": "assistant", "content": text})


class NoopAgent(TextAgent):
    """Always the same harmless move: a clarifying question, or a fixed answer."""

    name = "scripted:noop"

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        choices = allowed_choices(conv.tools)
        if not conv.tools:
            return _turn("Hello, I need some help with my account.")
        asking = next((c for c in choices if c not in ("answer", "finish")), None)
        if asking is not None:
            return _turn({"choice": asking, "content": QUESTION})
        return _turn({"choice": "answer", "content": ANSWER})


class RandomAgent(TextAgent):
    """A random allowed choice with canned content, seeded by the turn seed; optional delay."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.name = "scripted:random" + (f":{delay_s:g}" if delay_s else "")

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        choices = allowed_choices(conv.tools) or ["action"]
        choice = random.Random(seed).choice(choices)
        if choice == "finish":
            return _turn({"choice": "finish"})
        return _turn({"choice": choice, "content": CANNED[choice]})


class OracleTextAgent(TextAgent):
    """The env's privileged oracle (``env.unwrapped.oracle_action()``); for tests and sanity runs."""

    name = "oracle"

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        action = conv.env.oracle_action() if conv.env is not None else None
        return _turn(action if action is not None else "[finish]")
