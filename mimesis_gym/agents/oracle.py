"""The oracle agent: plays each env's privileged oracle policy (docs/env-contract.md, "Attributes").

It reads ``env.unwrapped.oracle_action()``, which sees the hidden task data, so it is a test and
teaching baseline (the upper bound of an env's score), never a measure of an agent.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

__all__ = ["OracleAgent", "run_oracle_episode"]


class OracleAgent:
    """Returns the env's privileged oracle action for the current state."""

    name = "oracle"

    def act(self, env: gym.Env[Any, Any]) -> str | dict[str, Any]:
        action = env.unwrapped.oracle_action()  # type: ignore[attr-defined]
        if action is None:
            raise ValueError(f"{env.unwrapped.spec.id if env.unwrapped.spec else env}: the task has no oracle data")
        return action


def run_oracle_episode(
    env: gym.Env[Any, Any], *, seed: int | None = None, options: dict[str, Any] | None = None
) -> tuple[float, list[float], dict[str, Any]]:
    """Play one episode with the oracle; return (episode score, step rewards, last info)."""
    agent = OracleAgent()
    _, info = env.reset(seed=seed, options=options)
    rewards: list[float] = []
    terminated = truncated = False
    while not (terminated or truncated):
        _, reward, terminated, truncated, info = env.step(agent.act(env))
        rewards.append(reward)
    return float(info["episode_score"]), rewards, info
