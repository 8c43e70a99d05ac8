"""The fair scripted baseline agent, ``scripted:baseline``: one readable strategy per shipped env.

The agent picks its strategy from ``Conversation.env_id`` (the public env id the runner announces):
Gymnasium's registry names the env class behind the id, and the class's ``env_name`` (the env
table's short name, e.g. ``telepathy``) keys :data:`STRATEGIES`. The agent layer may not import the
envs, so the id is resolved through Gymnasium, the one public map from ids to classes. It decides
each turn from the public dialogue only (:class:`~.dialogue.Dialogue`: system prompt, opening, its
own past actions and the feedback). It never reads ``Conversation.env`` nor any hidden
task field, is deterministic (same conversation, same action; the seed is not used), and asks every
user the same questions, so it also serves as the fixed probing agent when users are compared.
An env it has no strategy for gets the generic move of ``scripted:noop``.
"""

from __future__ import annotations

from collections.abc import Callable

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

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

__all__ = ["STRATEGIES", "BaselineAgent", "env_name_of", "strategy_for"]

STRATEGIES: dict[str, Callable[[Dialogue], Action]] = {
    "travel": travel.next_action,
    "turtle": turtle.next_action,
    "function": function.next_action,
    "tau": tau.next_action,
    "persuade": persuade.next_action,
    "intention": intention.next_action,
    "telepathy": telepathy.next_action,
    "search": search.next_action,
    "abcd": abcd.next_action,
    "replay": replay.next_action,
}
"""The env's short name (its class's ``env_name``, the env table's ``short``) -> strategy. Every
conversation env of the env table has one here unless its class sets ``has_baseline_strategy =
False`` (tests/test_baseline_agent.py holds them to it)."""


def env_name_of(env_id: str) -> str:
    """The ``env_name`` of the class Gymnasium registers as ``env_id``; ``""`` when the id is not
    registered or its class declares none."""
    if env_id not in gym.registry:
        return ""
    creator = gym.spec(env_id).entry_point
    env_class = load_env_creator(creator) if isinstance(creator, str) else creator
    name = getattr(env_class, "env_name", "")
    return name if isinstance(name, str) else ""


def strategy_for(env_id: str) -> Callable[[Dialogue], Action] | None:
    """The strategy of ``env_id`` (``mimesis/TelepathyGym-v0`` -> ``telepathy``), None when unknown."""
    return STRATEGIES.get(env_name_of(env_id))


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
