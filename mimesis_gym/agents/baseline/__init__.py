"""The fair scripted baseline agent, ``scripted:baseline``: the strategy each env declares.

Each env class declares its strategy (``ConversationEnv.baseline_strategy``, a pure function of the
public :class:`~.dialogue.Dialogue`; the shipped envs keep theirs in ``envs/<env>/baseline.py``, and a
plug-in env can ship its own). The agent finds the env class from ``Conversation.env_id`` (the public
env id the runner announces) through Gymnasium's registry, the one public map from ids to classes:
the agent layer may not import the envs. It decides each turn from the public dialogue only (system
prompt, opening, its own past actions and the feedback). It never reads ``Conversation.env`` nor any
hidden task field, is deterministic (same conversation, same action; the seed is not used), and asks
every user the same questions, so it also serves as the fixed probing agent when users are compared.
An env that declares no strategy gets the generic move of ``scripted:noop``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator

from mimesis_gym.agents.base import AgentTurn, Conversation, TextAgent, text_turn
from mimesis_gym.agents.baseline.dialogue import Action, Dialogue
from mimesis_gym.agents.scripted import NoopAgent

__all__ = ["BaselineAgent", "env_class_of", "env_name_of", "strategy_for"]


def env_class_of(env_id: str) -> Any:
    """The class Gymnasium registers as ``env_id``, ``None`` when the id is not registered. A
    ``module:`` prefix (a plug-in env, ``my_pkg:my/Env-v0``) is dropped: the run that announces the
    id has imported the module to build the env."""
    bare = env_id.rpartition(":")[2]
    if bare not in gym.registry:
        return None
    creator = gym.spec(bare).entry_point
    return load_env_creator(creator) if isinstance(creator, str) else creator


def env_name_of(env_id: str) -> str:
    """The ``env_name`` of the class Gymnasium registers as ``env_id``; ``""`` when the id is not
    registered or its class declares none."""
    name = getattr(env_class_of(env_id), "env_name", "")
    return name if isinstance(name, str) else ""


def strategy_for(env_id: str) -> Callable[[Dialogue], Action] | None:
    """The strategy the class of ``env_id`` declares (``mimesis/TelepathyGym-v0`` -> TelepathyGym's),
    None when the id is unknown or its class declares none."""
    strategy = getattr(env_class_of(env_id), "baseline_strategy", None)
    return strategy if callable(strategy) else None


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
