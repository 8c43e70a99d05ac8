"""The OpenEnv adapter: any registered env, with any user, as an OpenEnv environment (docs/integrations.md, "OpenEnv").

OpenEnv (``openenv-core``, Meta/Hugging Face) serves environments over HTTP and WebSocket: a
server holds one :class:`openenv.core.env_server.Environment` per WebSocket session and a client
(:class:`openenv.core.EnvClient`) sends ``reset``/``step``/``state`` messages. This module holds
the types and the two ends; :mod:`mimesis_gym.integrations.openenv_server` builds and runs the
server (``mimesis-gym serve-env``).

- :class:`MimesisAction`: the env's tool call (``choice``, ``content``) or a raw text action
  (``text``), exactly one of the two forms.
- :class:`MimesisObservation`: the observation ``text``, ``reward`` (``None`` after reset),
  ``done`` (terminated or truncated) and ``info``: the env's info without ``privileged``
  (:data:`PUBLIC_INFO_KEYS`) plus ``terminated``/``truncated``.
- :class:`MimesisState`: env id, task id, seed, step count, episode score, end state.
- :class:`MimesisOpenEnv`: one env of an :class:`~mimesis_gym.integrations.episode.EnvRecipe`
  (always ``privileged=False``); ``reset(seed=, task_id=, split=, episode_id=)``.
- :class:`MimesisEnvClient`: OpenEnv's ``EnvClient`` for these types, optionally sending a bearer
  token (servers bound beyond loopback require one).

Requires the extra ``openenv`` (``openenv-core``).
"""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server import Action, Environment, Observation, State
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import Field, model_validator
from pydantic_core import PydanticCustomError
from websockets.asyncio.client import connect as ws_connect

from mimesis_gym.core.env import INFO_KEYS
from mimesis_gym.core.errors import ConfigurationError, MimesisGymError
from mimesis_gym.integrations.episode import EnvRecipe, EpisodeOverError

__all__ = [
    "PUBLIC_INFO_KEYS",
    "MimesisAction",
    "MimesisEnvClient",
    "MimesisObservation",
    "MimesisOpenEnv",
    "MimesisState",
    "SessionClosedError",
    "public_info",
    "user_label",
]

PUBLIC_INFO_KEYS = tuple(key for key in INFO_KEYS if key != "privileged")
"""The keys of the env's ``info`` an observation carries; ``privileged`` (hidden task data) never leaves the server."""

RESET_KEYS = frozenset({"seed", "episode_id", "task_id", "split"})


class SessionClosedError(MimesisGymError, RuntimeError):
    """A message reached a session whose env the server closed (OpenEnv's idle reaper keeps the socket open)."""


class MimesisAction(Action):
    """One turn: the env's tool call ``interact_with_env(choice, content)`` or a raw ``text`` action."""

    choice: str | None = Field(default=None, description="The tool call's choice, e.g. 'action' or 'answer'.")
    content: str | None = Field(default=None, description="The tool call's content.")
    text: str | None = Field(
        default=None, description="A raw text action, e.g. '[answer] 42' (instead of a tool call)."
    )

    # PydanticCustomError, not ValueError: OpenEnv puts the validation errors into its JSON reply,
    # and a ValueError in their context cannot be serialised (the session would end instead).
    @model_validator(mode="after")
    def _one_form(self) -> MimesisAction:
        call = self.choice is not None or self.content is not None
        if call == (self.text is not None):
            raise PydanticCustomError(
                "action_form", "an action is either a tool call (choice and content) or a raw text, exactly one"
            )
        if call and (self.choice is None or self.content is None):
            raise PydanticCustomError("action_form", "a tool call needs both choice and content")
        return self

    def env_action(self) -> str | dict[str, str]:
        """What ``env.step`` takes: the raw text, or ``{"choice", "content"}``."""
        if self.text is not None:
            return self.text
        return {"choice": self.choice, "content": self.content}  # type: ignore[dict-item]


class MimesisObservation(Observation):
    """The env's observation text; ``info`` holds only :data:`PUBLIC_INFO_KEYS` plus the end state."""

    text: str = Field(default="", description="The observation: the user's reply, the env's feedback.")
    info: dict[str, Any] = Field(default_factory=dict, description="Public info of the turn (never privileged).")


class MimesisState(State):
    """Where the session's episode stands (``step_count`` counts the steps of the current episode)."""

    env_id: str = ""
    task_id: str | None = None
    seed: int | None = None
    episode_score: float = 0.0
    terminated: bool = False
    truncated: bool = False


def user_label(recipe: EnvRecipe) -> str:
    """The user as clients and logs see it: its alias, or a chat-model object's class name (not its settings)."""
    return recipe.user if isinstance(recipe.user, str) else type(recipe.user).__name__


def public_info(info: dict[str, Any], terminated: bool, truncated: bool) -> dict[str, Any]:
    """The part of an env's ``info`` that may leave the server, with the end state."""
    return {
        **{key: info[key] for key in PUBLIC_INFO_KEYS if key in info},
        "terminated": terminated,
        "truncated": truncated,
    }


class MimesisOpenEnv(Environment[MimesisAction, MimesisObservation, MimesisState]):
    """One env of a recipe behind OpenEnv's ``Environment`` interface (one per WebSocket session).

    ``reset`` takes ``seed``, ``task_id``, ``split`` and ``episode_id``; any other key is an error
    (OpenEnv's client passes reset kwargs through). ``step`` before a reset or after the episode
    ended raises :class:`~mimesis_gym.integrations.episode.EpisodeOverError`, and any call after
    :meth:`close` (OpenEnv's idle reaper closes the env but not the WebSocket) raises
    :class:`SessionClosedError`; the server answers both with an error message. Sessions never
    share state, so concurrent sessions are safe.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, recipe: EnvRecipe) -> None:
        super().__init__()
        self.recipe = recipe
        self.env = recipe.make()
        self._state = MimesisState(env_id=recipe.env_id)
        self._started = False
        self._closed = False

    def reset(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_id: str | None = None,
        split: str | None = None,
        **kwargs: Any,
    ) -> MimesisObservation:
        self._check_open()
        if kwargs:
            raise ConfigurationError(f"unknown reset key(s) {sorted(kwargs)}; accepted: {sorted(RESET_KEYS)}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise ConfigurationError(f"seed must be an int or null; got {seed!r}")
        options = {key: value for key, value in (("task_id", task_id), ("split", split)) if value is not None}
        if episode_id is not None:
            options["episode_id"] = episode_id
        self._started = False
        try:
            obs, info = self.env.reset(seed=seed, options=options)
        except Exception:
            # A failed reset (an unknown task id, an unavailable user) can leave the env and its
            # gymnasium wrappers half-reset: the session continues with a fresh env.
            self.env.close()
            self.env = self.recipe.make()
            raise
        self._started = True
        self._state = MimesisState(
            env_id=self.recipe.env_id, episode_id=episode_id, task_id=info["task_id"], seed=seed, step_count=0
        )
        return MimesisObservation(text=obs, reward=None, done=False, info=public_info(info, False, False))

    def step(self, action: MimesisAction, timeout_s: float | None = None, **kwargs: Any) -> MimesisObservation:
        self._check_open()
        state = self._state
        if not self._started or state.terminated or state.truncated:
            raise EpisodeOverError(
                "reset first: no episode has started"
                if not self._started
                else f"the episode ended after {state.step_count} turns; reset to start another"
            )
        obs, reward, terminated, truncated, info = self.env.step(action.env_action())
        terminated, truncated = bool(terminated), bool(truncated)
        self._state = state.model_copy(
            update={
                "step_count": state.step_count + 1,
                "episode_score": float(info["episode_score"]),
                "terminated": terminated,
                "truncated": truncated,
            }
        )
        return MimesisObservation(
            text=obs, reward=float(reward), done=terminated or truncated, info=public_info(info, terminated, truncated)
        )

    @property
    def runs_inline(self) -> bool:
        """Whether the env calls no chat model (a scripted user): its turns are short CPU work."""
        return not self.env.unwrapped.role_models.chat_models

    async def reset_async(
        self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any
    ) -> MimesisObservation:
        """:meth:`reset` on the server's event loop when :attr:`runs_inline`, else in a worker thread."""
        if self.runs_inline:
            return self.reset(seed=seed, episode_id=episode_id, **kwargs)
        return await asyncio.to_thread(partial(self.reset, seed=seed, episode_id=episode_id, **kwargs))

    async def step_async(
        self, action: MimesisAction, timeout_s: float | None = None, **kwargs: Any
    ) -> MimesisObservation:
        """:meth:`step` on the server's event loop when :attr:`runs_inline` (no thread hop), else in a worker thread.

        A turn that waits on a chat model (an LLM user or judge) runs in a thread, so other sessions go on.
        """
        if self.runs_inline:
            return self.step(action, **kwargs)
        return await asyncio.to_thread(partial(self.step, action, **kwargs))

    @property
    def state(self) -> MimesisState:
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name=self.recipe.env_id,
            description=f"{self.recipe.env_id} (mimesis_gym) with user {user_label(self.recipe)}",
        )

    def close(self) -> None:
        self._closed = True
        self.env.close()

    def _check_open(self) -> None:
        if self._closed:
            raise SessionClosedError(
                "this session's env was closed (idle longer than the server's timeout, or the server is stopping); "
                "open a new connection"
            )


class MimesisEnvClient(EnvClient[MimesisAction, MimesisObservation, MimesisState]):
    """OpenEnv's WebSocket client for a ``mimesis-gym serve-env`` server.

    ``step`` takes a :class:`MimesisAction` or a dict of its fields. ``token`` is sent as
    ``Authorization: Bearer <token>`` when the connection opens (required by servers started with
    ``--token-env``). Async like every ``EnvClient``; ``.sync()`` gives the blocking wrapper.
    """

    def __init__(self, base_url: str, *, token: str | None = None, **kwargs: Any) -> None:
        super().__init__(base_url, **kwargs)
        if token is not None and not token:
            raise ConfigurationError("token is empty: pass the server's token or None")
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    async def connect(self) -> MimesisEnvClient:
        if self._ws is None and self._headers:
            try:
                self._ws = await ws_connect(
                    self._ws_url,
                    open_timeout=self._connect_timeout,
                    max_size=self._max_message_size,
                    additional_headers=self._headers,
                )
            except Exception as error:
                raise ConnectionError(f"Failed to connect to {self._ws_url}: {error}") from error
            return self
        await super().connect()
        return self

    def _step_payload(self, action: MimesisAction | dict[str, Any]) -> dict[str, Any]:
        if isinstance(action, dict):
            action = MimesisAction(**action)
        return action.model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[MimesisObservation]:
        observation = MimesisObservation(
            **payload.get("observation", {}), reward=payload.get("reward"), done=payload.get("done", False)
        )
        return StepResult(observation=observation, reward=observation.reward, done=observation.done)

    def _parse_state(self, payload: dict[str, Any]) -> MimesisState:
        return MimesisState(**payload)
