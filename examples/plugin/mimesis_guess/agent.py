"""BisectAgent: plays GuessNumber by halving the range the user's replies leave (the plug-in's agent).

Its move, :func:`next_guess`, is also the env's fair baseline strategy (``scripted:baseline``): a pure
function of the public dialogue, which the env class declares as ``baseline_strategy``.
"""

from __future__ import annotations

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent, text_turn
from mimesis_gym.agents.baseline.dialogue import Action, Dialogue

__all__ = ["BisectAgent", "next_guess"]


def next_guess(dialogue: Dialogue) -> Action:
    """Binary search over 1..100 from the replies so far: found in at most 7 guesses."""
    low, high = 1, 100
    for exchange in dialogue.of("answer"):
        if not exchange.content.strip().isdigit():
            continue
        guess = int(exchange.content)
        if exchange.feedback.startswith("Higher"):
            low = guess + 1
        elif exchange.feedback.startswith("Lower"):
            high = guess - 1
    if low > high:
        return {"choice": "finish"}
    return {"choice": "answer", "content": str((low + high) // 2)}


class BisectAgent(TextAgent):
    """:func:`next_guess` as an agent of its own (``guess-bisect``)."""

    name = "guess-bisect"

    def __init__(self, max_tokens: int = 2048) -> None:
        self.max_tokens = max_tokens  # one of make_agent's options, taken to show how they arrive

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        return text_turn(next_guess(Dialogue.from_conversation(conv)))
