"""The fair scripted baseline agent, ``scripted:baseline``: one readable strategy per shipped env.

The agent picks its strategy from ``Conversation.env_id`` (the public env id the runner announces)
and decides each turn from the public dialogue only (:class:`~.dialogue.Dialogue`: system prompt,
opening, its own past actions and the feedback). It never reads ``Conversation.env`` nor any hidden
task field, is deterministic (same conversation, same action; the seed is not used), and asks every
user the same questions, so it also serves as the fixed probing agent when users are compared.
An env it has no strategy for gets the generic move of ``scripted:noop``.
"""

from __future__ import annotations

from collections.abc import Callable

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent, text_turn
from mimesis_gym.agents.baseline import (
    abcd,
    function,
    intention,
    persuade,
    replay,
    search,
    tau,
    telepathy,
    travel,
    turtle,
)
from mimesis_gym.agents.baseline.dialogue import Action, Dialogue
from mimesis_gym.agents.scripted import NoopAgent

__all__ = ["STRATEGIES", "BaselineAgent", "strategy_for"]

STRATEGIES: dict[str, Callable[[Dialogue], Action]] = {
    "TravelGym": travel.next_action,
    "TurtleGym": turtle.next_action,
    "FunctionGym": function.next_action,
    "TauGym": tau.next_action,
    "PersuadeGym": persuade.next_action,
    "IntentionGym": intention.next_action,
    "TelepathyGym": telepathy.next_action,
    "SearchGym": search.next_action,
    "ABCDBehavior": abcd.next_action,
    "HumanReplay": replay.next_action,
}
"""Env name (the id without namespace and version, e.g. ``TelepathyGym``) -> strategy."""


def strategy_for(env_id: str) -> Callable[[Dialogue], Action] | None:
    """The strategy of ``env_id`` (``mimesis/TelepathyGym-v0`` -> ``TelepathyGym``), None when unknown."""
    name = env_id.rsplit("/", 1)[-1].rsplit("-v", 1)[0]
    return STRATEGIES.get(name)


class BaselineAgent(TextAgent):
    """``scripted:baseline``: the env's fair scripted strategy (see the module docstring)."""

    name = "scripted:baseline"

    def __init__(self) -> None:
        self.fallback = NoopAgent()

    async def act(self, conv: Conversation, *, seed: int) -> AgentTurn:
        strategy = strategy_for(conv.env_id)
        if strategy is None:
            return await self.fallback.act(conv, seed=seed)
        return text_turn(strategy(Dialogue.from_conversation(conv)))
