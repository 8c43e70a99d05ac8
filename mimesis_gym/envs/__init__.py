"""The environments, one sub-package each, and their Gymnasium registration."""

from __future__ import annotations

import gymnasium as gym

__all__ = ["ENV_IDS", "SHORT_NAMES", "register_envs"]

MAX_EPISODE_STEPS = 16

ENTRY_POINTS: dict[str, str] = {
    "mimesis/TravelGym-v0": "mimesis_gym.envs.travel.env:TravelEnv",
    "mimesis/TurtleGym-v0": "mimesis_gym.envs.turtle.env:TurtleEnv",
    "mimesis/FunctionGym-v0": "mimesis_gym.envs.function.env:FunctionEnv",
    "mimesis/TauGym-v0": "mimesis_gym.envs.tau.env:TauEnv",
    "mimesis/PersuadeGym-v0": "mimesis_gym.envs.persuade.env:PersuadeEnv",
    "mimesis/IntentionGym-v0": "mimesis_gym.envs.intention.env:IntentionEnv",
    "mimesis/TelepathyGym-v0": "mimesis_gym.envs.telepathy.env:TelepathyEnv",
    "mimesis/SearchGym-v0": "mimesis_gym.envs.search.env:SearchEnv",
    "mimesis/ABCDBehavior-v0": "mimesis_gym.envs.abcd.env:ABCDBehaviorEnv",
}
"""Every registered id and its entry point. Only envs that exist are listed."""

SHORT_NAMES: dict[str, str] = {
    "mimesis/TravelGym-v0": "travel",
    "mimesis/TurtleGym-v0": "turtle",
    "mimesis/FunctionGym-v0": "function",
    "mimesis/TauGym-v0": "tau",
    "mimesis/PersuadeGym-v0": "persuade",
    "mimesis/IntentionGym-v0": "intention",
    "mimesis/TelepathyGym-v0": "telepathy",
    "mimesis/SearchGym-v0": "search",
    "mimesis/ABCDBehavior-v0": "abcd",
}
ENV_IDS: tuple[str, ...] = tuple(ENTRY_POINTS)


WRAPPER_ENTRY_POINTS: dict[str, str] = {
    "mimesis/TelepathyDiscrete-v0": "mimesis_gym.envs.telepathy.discrete:TelepathyDiscreteEnv",
}
"""Classic-RL views of conversation envs (discrete actions, vector observations); not conversation
envs themselves, so they stay out of ``ENV_IDS`` and the contract suite."""


def register_envs() -> None:
    """Register every env id with Gymnasium; calling it again changes nothing."""
    for env_id, entry_point in ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, max_episode_steps=MAX_EPISODE_STEPS)
    for env_id, entry_point in WRAPPER_ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point)
