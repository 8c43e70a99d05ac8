"""The environments, one sub-package each, and their Gymnasium registration."""

from __future__ import annotations

import gymnasium as gym

__all__ = ["ENV_IDS", "SHORT_NAMES", "register_envs"]

MAX_EPISODE_STEPS = 16

ENTRY_POINTS: dict[str, str] = {
    "mimesis/FunctionGym-v0": "mimesis_gym.envs.function.env:FunctionEnv",
}
"""Every registered id and its entry point. Only envs that exist are listed."""

SHORT_NAMES: dict[str, str] = {"mimesis/FunctionGym-v0": "function"}
ENV_IDS: tuple[str, ...] = tuple(ENTRY_POINTS)


def register_envs() -> None:
    """Register every env id with Gymnasium; calling it again changes nothing."""
    for env_id, entry_point in ENTRY_POINTS.items():
        if env_id not in gym.registry:
            gym.register(id=env_id, entry_point=entry_point, max_episode_steps=MAX_EPISODE_STEPS)
