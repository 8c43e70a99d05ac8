"""BisectAgent: plays GuessNumber by halving the range the user's replies leave (the plug-in's agent)."""

from __future__ import annotations

import re

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent, text_turn

__all__ = ["BisectAgent"]

GUESS = re.compile(r"^\[answer\]\s*(\d+)")


class BisectAgent(TextAgent):
    """Binary search over 1..100 from the replies so far: found in at most 7 guesses."""

    name = "guess-bisect"

    def __init__(self, max_tokens: int = 2048) -> None:
        self.max_tokens = max_tokens  # one of make_agent's options, taken to show how they arrive

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        low, high = 1, 100
        for said, reply in zip(conv.messages, conv.messages[1:], strict=False):
            match = GUESS.match(str(said.get("content", ""))) if said.get("role") == "assistant" else None
            if match is not None and reply.get("role") == "user":
                guess = int(match.group(1))
                if str(reply.get("content", "")).startswith("Higher"):
                    low = guess + 1
                elif str(reply.get("content", "")).startswith("Lower"):
                    high = guess - 1
        if low > high:
            return text_turn({"choice": "finish"})
        return text_turn({"choice": "answer", "content": str((low + high) // 2)})
