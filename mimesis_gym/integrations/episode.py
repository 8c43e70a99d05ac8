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

import dataclasses
import importlib
import inspect
from typing import Any

import gymnasium as gym
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mimesis_gym.core.actions import interact_with_env_tool
from mimesis_gym.core.env import ConversationEnv
from mimesis_gym.core.errors import ConfigurationError, MimesisGymError
from mimesis_gym.envs import load_env_plugins

__all__ = ["EnvRecipe", "EpisodeOverError", "ToolEpisode", "tool_schema"]

TOOL_NAME = "interact_with_env"

GYM_MAKE_KWARGS = frozenset(name for name in inspect.signature(gym.make).parameters if name not in {"id", "kwargs"})
"""The keywords ``gym.make`` takes itself (``max_episode_steps``, ``disable_env_checker``)."""


class EpisodeOverError(MimesisGymError, RuntimeError):
    """``interact_with_env`` was called after the episode terminated, was truncated or failed (a reset
    or step raised), or before it started."""


class EnvRecipe(BaseModel):
    """How to build the env of every rollout: a registered id, its user and its kwargs.

    ``env_id`` may carry a module prefix (``"my_pkg.envs:my/Env-v0"``), imported first, as
    ``gym.make`` does. ``user`` is a user alias or a chat-model object (docs/users.md).
    ``max_episode_steps`` overrides the registered turn limit. ``env_kwargs`` go to ``gym.make``;
    they may not hold ``user`` (use the field) nor ``privileged=True`` (adapters never expose
    privileged information).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    env_id: str = Field(description="A registered env id, optionally 'module:id'.")
    user: Any = Field(default="scripted", description="A user alias or a chat-model object.")
    env_kwargs: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments for gym.make.")
    max_episode_steps: int | None = Field(default=None, ge=1, description="Override of the registered turn limit.")

    @field_validator("env_id")
    @classmethod
    def _registered(cls, env_id: str) -> str:
        module, _, bare = env_id.rpartition(":")
        if module:
            try:
                importlib.import_module(module)
            except ImportError as error:
                raise ConfigurationError(f"env id {env_id!r}: cannot import module {module!r} ({error})") from None
        if bare not in gym.registry:
            load_env_plugins()  # an installed plug-in package's env (entry-point group mimesis_gym.envs)
        if bare not in gym.registry:
            raise ConfigurationError(
                f"unknown env id {bare!r}: `mimesis-gym list` shows the registered ids; "
                "an env of your own needs mimesis_gym.register_env() first (docs/writing-an-env.md)"
            )
        return env_id

    @field_validator("env_kwargs")
    @classmethod
    def _no_reserved_kwargs(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        if "user" in kwargs:
            raise ConfigurationError("env_kwargs holds 'user': pass the user as user=... instead")
        if kwargs.get("privileged"):
            raise ConfigurationError(
                "env_kwargs holds privileged=True: the engine adapters never expose privileged information; remove it"
            )
        return kwargs

    @model_validator(mode="after")
    def _conversation_env(self) -> EnvRecipe:
        entry_point = gym.spec(self.env_id.rpartition(":")[2]).entry_point
        if isinstance(entry_point, str):
            module, _, name = entry_point.partition(":")
            entry_point = getattr(importlib.import_module(module), name)
        if not (isinstance(entry_point, type) and issubclass(entry_point, ConversationEnv)):
            raise ConfigurationError(
                f"{self.env_id!r} is not a conversation env (its entry point is {entry_point!r}); "
                "the adapters drive ConversationEnv subclasses through interact_with_env"
            )
        accepted = entry_point.init_kwarg_names() | GYM_MAKE_KWARGS
        unknown = sorted(set(self.env_kwargs) - accepted)
        if unknown:
            raise ConfigurationError(
                f"{self.env_id} takes no {unknown[0]!r}; it takes "
                f"{', '.join(sorted(accepted - {'user', 'privileged'}))}"
            )
        return self

    def make(self) -> gym.Env:
        """A new env of the recipe (always ``privileged=False``).

        Built as ``gym.make`` builds it, turn limit (``TimeLimit``) included, but without gymnasium's
        ``PassiveEnvChecker`` and ``OrderEnforcing`` wrappers: every adapter refuses a step before a
        reset itself, the contract suite checks the spaces, and the two wrappers cost up to 1 µs of
        a 12 µs scripted FunctionGym step (docs/integrations.md, "Overhead"). ``env_kwargs`` may turn the checker
        back on (``disable_env_checker=False``).
        """
        kwargs = {"disable_env_checker": True, **self.env_kwargs, "user": self.user, "privileged": False}
        if self.max_episode_steps is not None:
            kwargs["max_episode_steps"] = self.max_episode_steps
        spec = dataclasses.replace(gym.spec(self.env_id.rpartition(":")[2]), order_enforce=False)
        return gym.make(spec, **kwargs)


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
