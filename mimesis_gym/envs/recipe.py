"""One way to build a conversation env: :class:`EnvRecipe` (docs/env-contract.md, "Building an env").

Evaluation (``evaluation/episode.py``), training (``algorithms/tasks.py``) and the engine adapters
(``integrations/``) all build their envs from a recipe, so an env is made the same way everywhere.

The wrapper rule: :meth:`EnvRecipe.build` returns the env under its turn limit (``TimeLimit``) and
nothing else. Training and the adapters step the env synchronously and end an episode on the
``truncated`` that ``TimeLimit`` sets, so the limit must be there. Gymnasium's ``PassiveEnvChecker``
and ``OrderEnforcing`` are left out: every caller resets before it steps (the adapters refuse a step
before a reset themselves), the contract suite (``evaluation/contract.py``) checks the spaces through
``gym.make``'s own stack, and the two wrappers only cost time on every step. Evaluation drives the
env's async API (``areset``/``astep``, which no wrapper carries) on ``env.unwrapped`` and caps the
turns with its own ``max_turns``. ``env_kwargs={"disable_env_checker": False}`` turns the checker back on.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import load_env_creator
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from mimesis_gym.core.env import ConversationEnv
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.envs import load_env_plugins

__all__ = ["GYM_MAKE_KWARGS", "EnvRecipe", "env_creator"]

GYM_MAKE_KWARGS = frozenset(name for name in inspect.signature(gym.make).parameters if name not in {"id", "kwargs"})
"""The keywords ``gym.make`` takes itself (``max_episode_steps``, ``disable_env_checker``)."""


class EnvRecipe(BaseModel):
    """How to build a conversation env: a registered id, its user, its kwargs and its turn limit.

    ``env_id`` may carry a module prefix (``"my_pkg.envs:my/Env-v0"``), imported first, as
    ``gym.make`` does. ``user`` is a user alias or a chat-model object (docs/users.md).
    ``env_kwargs`` are the env's own keyword arguments (``judge``, ``split``, ``pack``, ``data_dir``,
    ``user_kwargs``, ``user_behavior``, ``role_max_tokens``, ``privileged``, …) and ``gym.make``'s
    (``disable_env_checker``); they may not hold ``user`` (use the field). ``max_episode_steps``
    overrides the registered turn limit. Everything is checked at construction: an unknown id, a
    module that does not import, an id that is not a conversation env, or a keyword the env does not
    take raises :class:`~mimesis_gym.core.errors.ConfigurationError` (inside pydantic's
    ``ValidationError``) naming the value and the fix. Chat-model objects are kept as given, not copied.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    env_id: str = Field(description="A registered env id, optionally 'module:id'.")
    user: Any = Field(default="scripted", description="A user alias or a chat-model object.")
    env_kwargs: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments for the env.")
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
    def _no_user_kwarg(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        if "user" in kwargs:
            raise ConfigurationError("env_kwargs holds 'user': pass the user as user=... instead")
        return kwargs

    @model_validator(mode="after")
    def _conversation_env(self) -> EnvRecipe:
        entry_point = env_creator(self.env_id)
        if not (isinstance(entry_point, type) and issubclass(entry_point, ConversationEnv)):
            raise ConfigurationError(
                f"{self.env_id!r} is not a conversation env (its entry point is {entry_point!r}); "
                "a recipe builds ConversationEnv subclasses, a view such as mimesis/TelepathyDiscrete-v0 "
                "is made with gym.make"
            )
        accepted = entry_point.init_kwarg_names() | GYM_MAKE_KWARGS
        unknown = sorted(set(self.env_kwargs) - accepted)
        if unknown:
            raise ConfigurationError(
                f"{self.env_id} takes no {unknown[0]!r}; it takes {', '.join(sorted(accepted - {'user'}))}"
            )
        return self

    @property
    def registered_id(self) -> str:
        """``env_id`` without its module prefix: the id gymnasium's registry knows."""
        return self.env_id.rpartition(":")[2]

    def with_kwargs(self, **kwargs: Any) -> EnvRecipe:
        """This recipe with ``kwargs`` laid over its ``env_kwargs`` (checked again, as at construction)."""
        return self.model_validate({**dict(self), "env_kwargs": {**self.env_kwargs, **kwargs}})

    def build(self) -> gym.Env:
        """A new env of the recipe: the env under its ``TimeLimit``, without gymnasium's
        ``PassiveEnvChecker`` (unless ``env_kwargs`` sets ``disable_env_checker=False``) and
        ``OrderEnforcing`` wrappers (the module docstring says why)."""
        kwargs = {"disable_env_checker": True, **self.env_kwargs, "user": self.user}
        if self.max_episode_steps is not None:
            kwargs["max_episode_steps"] = self.max_episode_steps
        spec = dataclasses.replace(gym.spec(self.registered_id), order_enforce=False)
        return gym.make(spec, **kwargs)


def env_creator(env_id: str) -> Any:
    """What gymnasium makes ``env_id`` with (the class, for a conversation env); ``module:id`` imports
    the module first. The id is one gymnasium knows (:class:`EnvRecipe` checks it)."""
    module, _, name = str(env_id).rpartition(":")
    if module:
        importlib.import_module(module)
    entry_point = gym.spec(name).entry_point
    return load_env_creator(entry_point) if isinstance(entry_point, str) else entry_point
