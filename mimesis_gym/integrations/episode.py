"""What every engine adapter shares: the env recipe and one tool-driven episode (docs/integrations.md).

An outside engine sees an env as one tool, ``interact_with_env(choice, content)``, and a prompt.
:class:`EnvRecipe` names the env (a registered id, its user, its kwargs) and is checked once, at
construction, so a mistyped id or a forbidden kwarg fails before any rollout. :class:`ToolEpisode`
drives one env through that tool: it starts from a task id and a seed, turns every call into one
``env.step``, returns the observation text, and keeps the episode's score, summed turn rewards,
end state, user failures and the error of a step that raised. Privileged information never leaves
it: envs are built with ``privileged=False`` and ``info["privileged"]`` is never read.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
from pydantic import field_validator

from mimesis_gym.core.actions import interact_with_env_tool
from mimesis_gym.core.errors import ConfigurationError, MimesisGymError
from mimesis_gym.envs import recipe

__all__ = ["EnvRecipe", "EpisodeOverError", "ToolEpisode", "tool_schema"]

TOOL_NAME = "interact_with_env"


class EpisodeOverError(MimesisGymError, RuntimeError):
    """``interact_with_env`` was called after the episode terminated, was truncated or failed (a reset
    or step raised), or before it started."""


class EnvRecipe(recipe.EnvRecipe):
    """How to build the env of every rollout: the envs' :class:`~mimesis_gym.envs.recipe.EnvRecipe`
    (a registered id, its user, its kwargs, its turn limit; built under ``TimeLimit`` only), which
    also refuses ``privileged=True`` in ``env_kwargs``: the adapters never expose privileged
    information, so their envs are always built with ``privileged=False``.
    """

    @field_validator("env_kwargs")
    @classmethod
    def _never_privileged(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        if kwargs.get("privileged"):
            raise ConfigurationError(
                "env_kwargs holds privileged=True: the engine adapters never expose privileged information; remove it"
            )
        return kwargs

    def make(self) -> gym.Env:
        """A new env of the recipe: :meth:`~mimesis_gym.envs.recipe.EnvRecipe.build` with
        ``privileged=False`` (docs/integrations.md, "Overhead", says what the wrapper stack costs)."""
        return self.with_kwargs(privileged=False).build()


def tool_schema(env: gym.Env) -> dict[str, Any]:
    """The OpenAI schema of the env's ``interact_with_env`` tool.

    The env's own advertised tool when it has one; for a plain-text env (``tools == []``) the tool
    built from its accepted kinds and ``tool_description`` (every env accepts the tool call).
    """
    base = env.unwrapped
    for tool in base.tools:
        if tool.get("function", {}).get("name") == TOOL_NAME:
            return tool
    return interact_with_env_tool(base.accepted_kinds, base.tool_description)


class ToolEpisode:
    """One env driven through ``interact_with_env``; reused across episodes with :meth:`start`.

    Not thread-safe: one episode at a time. :meth:`close` releases the env (its event loop and the
    chat models it created).
    """

    def __init__(self, recipe: EnvRecipe) -> None:
        self.recipe = recipe
        self.env = recipe.make()
        self._step = self.env.step  # bound once: act() is on every engine's per-call path
        self._live = False
        """Started and not yet ended: the one flag act() checks."""
        self.schema = tool_schema(self.env)
        self.task_id: str | None = None
        self.seed: int | None = None
        self.observations: list[str] = []
        """The opening observation, then one per step."""
        self.actions: list[dict[str, Any]] = []
        """``{"choice", "content"}`` of every call that stepped the env."""
        self.rewards: list[float] = []
        self.episode_score = 0.0
        self.terminated = False
        self.truncated = False
        self.user_failures: list[str] = []
        """``info["user_failure"]`` of the reset and of every step that had one."""
        self.error: BaseException | None = None
        """The exception a reset or step raised (an unavailable user, a bug): the episode is unusable."""

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated

    @property
    def reward_sum(self) -> float:
        """The summed turn rewards (equal to ``episode_score`` for envs scored by their sum)."""
        total = 0.0
        for reward in self.rewards:
            total += reward
        return total

    @property
    def system_prompt(self) -> str:
        """The policy's system prompt of the current task (public; after :meth:`start`)."""
        return self.env.unwrapped.system_prompt

    def start(self, task_id: str, seed: int) -> str:
        """Reset the env on ``task_id`` with ``seed``; return the opening observation."""
        if not isinstance(task_id, str) or not task_id:
            raise ConfigurationError(f"task_id must be a non-empty string; got {task_id!r}")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigurationError(f"seed must be an int; got {seed!r}")
        self.task_id, self.seed = task_id, seed
        self.observations, self.actions, self.rewards, self.user_failures = [], [], [], []
        self.episode_score, self.terminated, self.truncated, self.error = 0.0, False, False, None
        self._live = False
        try:
            obs, info = self.env.reset(seed=seed, options={"task_id": task_id})
        except BaseException as error:
            self.error = error
            raise
        if info["user_failure"]:
            self.user_failures.append(info["user_failure"])
        self.observations.append(obs)
        self._live = True
        return obs

    def act(self, choice: Any, content: Any) -> str:
        """One ``interact_with_env`` call: step the env, return the observation.

        Raises :class:`EpisodeOverError` after termination or truncation, and after a reset or step
        that raised (the env is not stepped); re-raises what the step raised after recording it in
        :attr:`error`.
        """
        if not self._live:
            raise EpisodeOverError(self._refusal())
        action = {"choice": choice, "content": content}
        try:
            obs, reward, terminated, truncated, info = self._step(action)
        except BaseException as error:
            self.error = error
            self._live = False
            raise
        self.actions.append(action)
        self.observations.append(obs)
        self.rewards.append(float(reward))
        self.episode_score = float(info["episode_score"])
        if terminated or truncated:
            self.terminated, self.truncated, self._live = bool(terminated), bool(truncated), False
        failure = info["user_failure"]
        if failure:
            self.user_failures.append(failure)
        return obs

    def close(self) -> None:
        self.env.close()

    def _refusal(self) -> str:
        if self.task_id is None:
            return "the episode has not started: call start(task_id, seed) first"
        if self.error is not None:
            return (
                f"the episode stopped: its reset or a step raised {type(self.error).__name__}; no further interaction"
            )
        end = "terminated" if self.terminated else "was truncated"
        return f"the episode {end} after {len(self.actions)} turns; no further interaction"
