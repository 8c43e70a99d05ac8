"""Simple scripted agents: ``scripted:noop``, ``scripted:random[:delay]``, ``oracle`` (``scripted:baseline``
lives in :mod:`mimesis_gym.agents.baseline`)."""

from __future__ import annotations

import asyncio
import random

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent, text_turn
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


class NoopAgent(TextAgent):
    """Always the same harmless move: a clarifying question, or a fixed answer."""

    name = "scripted:noop"

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        choices = allowed_choices(conv.tools)
        if not conv.tools:
            return text_turn("Hello, I need some help with my account.")
        asking = next((c for c in choices if c not in ("answer", "finish")), None)
        if asking is not None:
            return text_turn({"choice": asking, "content": QUESTION})
        return text_turn({"choice": "answer", "content": ANSWER})


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
            return text_turn({"choice": "finish"})
        return text_turn({"choice": choice, "content": CANNED[choice]})


class OracleTextAgent(TextAgent):
    """The env's privileged oracle (``env.unwrapped.oracle_action()``); for tests and sanity runs."""

    name = "oracle"
    privileged = True

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        action = conv.env.oracle_action() if conv.env is not None else None
        return text_turn(action if action is not None else "[finish]")
