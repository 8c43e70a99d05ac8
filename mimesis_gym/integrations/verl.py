"""The verl adapter: any registered env, with any user, as a verl multi-turn tool (docs/integrations.md, "verl").

:class:`MimesisTool` is a verl ``BaseTool`` named ``interact_with_env`` whose schema is the env's own
tool. verl builds it from the tool YAML that ``mimesis-gym verl-data`` writes (its ``config`` is a
:class:`~mimesis_gym.integrations.verl_data.ToolSettings`) and drives one episode per trajectory:

- ``create(instance_id, create_kwargs={"env_id", "task_id", "seed"})`` starts an episode (an env of
  the recipe is reused when a released one is idle) and answers the opening observation;
- ``execute(instance_id, {"choice", "content"})`` is one env step: the observation text, the turn
  reward and metrics (turn, ``terminated``, ``truncated``, ``user_failure``);
- ``calc_reward(instance_id)`` is the episode's score (``episode_score`` or the summed turn rewards);
- ``release(instance_id)`` frees the instance and keeps its env for the next ``create``.

verl 0.9's ``ToolAgentLoop`` creates and releases a tool instance around every single call, which
cannot hold an episode; the agent loop ``mimesis_agent``
(:mod:`mimesis_gym.integrations.verl_agent_loop`) drives the tool through the lifecycle above
instead. ``create`` without an instance id fails with that advice.

Env resets and steps run in a worker thread (``asyncio.to_thread``) for every user but the
in-process scripted one (``ToolSettings.step_in_thread``), so a step that waits on an LLM user does
not stall the other trajectories of verl's event loop. Privileged information never leaves the env
(``ToolEpisode`` builds envs with ``privileged=False``).
"""

from __future__ import annotations

import asyncio
import operator
from typing import Any

from verl.tools.base_tool import BaseTool
from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.integrations.episode import TOOL_NAME, EnvRecipe, EpisodeOverError, ToolEpisode
from mimesis_gym.integrations.verl_data import ToolSettings, combined_tool_schema

__all__ = ["MimesisTool"]

CREATE_KEYS = frozenset({"env_id", "task_id", "seed"})


class MimesisTool(BaseTool):
    """The env's ``interact_with_env`` as a verl tool; one episode per instance id.

    ``config`` is the tool YAML's ``config`` block (:class:`ToolSettings`); ``tool_schema`` the
    YAML's schema, else the served envs' own (:func:`combined_tool_schema`). A schema whose
    function is not ``interact_with_env`` is refused. Safe for concurrent trajectories on one event
    loop: each instance has its own env.
    """

    def __init__(self, config: dict[str, Any], tool_schema: OpenAIFunctionToolSchema | None = None) -> None:
        self.settings = ToolSettings.model_validate(config)
        self._recipes: dict[str, EnvRecipe] = {env_id: self.settings.recipe(env_id) for env_id in self.settings.env_ids}
        self._idle: dict[str, list[ToolEpisode]] = {env_id: [] for env_id in self.settings.env_ids}
        self._episodes: dict[str, ToolEpisode] = {}
        self._threaded = self.settings.threaded
        if tool_schema is None:
            schemas = []
            for env_id in self.settings.env_ids:
                episode = ToolEpisode(self._recipes[env_id])
                schemas.append(episode.schema)
                self._idle[env_id].append(episode)
            tool_schema = OpenAIFunctionToolSchema.model_validate(combined_tool_schema(schemas))
        if tool_schema.function.name != TOOL_NAME:
            raise ConfigurationError(
                f"the tool schema names {tool_schema.function.name!r}; the env's tool is {TOOL_NAME!r}"
            )
        super().__init__(config, tool_schema)

    @property
    def instance_ids(self) -> list[str]:
        """The instance ids that hold an episode (created, not yet released)."""
        return list(self._episodes)

    def episode(self, instance_id: str) -> ToolEpisode:
        """The live episode of ``instance_id`` (task, seed, actions, observations, rewards, score, end)."""
        try:
            return self._episodes[instance_id]
        except KeyError:
            raise ConfigurationError(f"no episode has instance id {instance_id!r} (not created, or released)") from None

    async def create(
        self, instance_id: str | None = None, create_kwargs: dict[str, Any] | None = None, **kwargs: Any
    ) -> tuple[str, ToolResponse]:
        """Start the episode of ``create_kwargs`` (or of the keyword arguments); answer the opening observation."""
        if instance_id is None:
            raise ConfigurationError(
                "MimesisTool.create needs an instance id that lasts the whole trajectory; verl's tool_agent "
                "loop creates a new instance per call: run the agent loop 'mimesis_agent' (the agent_name column "
                "mimesis-gym verl-data writes, and the agent_loop.yaml it writes as agent_loop_config_path)"
            )
        if instance_id in self._episodes:
            raise ConfigurationError(f"instance id {instance_id!r} already holds an episode; release it first")
        spec = dict(create_kwargs if create_kwargs is not None else kwargs)
        unknown = set(spec) - CREATE_KEYS
        if unknown:
            raise ConfigurationError(
                f"create_kwargs has unknown keys {sorted(unknown)}; allowed: {sorted(CREATE_KEYS)}"
            )
        env_id = spec.get("env_id")
        if env_id is None:
            if len(self.settings.env_ids) != 1:
                raise ConfigurationError(
                    f"create_kwargs has no env_id and the tool serves several envs {self.settings.env_ids}"
                )
            env_id = self.settings.env_ids[0]
        if env_id not in self._recipes:
            self.settings.recipe(env_id)  # raises, naming the served ids
        if "task_id" not in spec or "seed" not in spec:
            raise ConfigurationError(f"create_kwargs needs task_id and seed; got {sorted(spec)}")
        idle = self._idle[env_id]
        episode = idle.pop() if idle else ToolEpisode(self._recipes[env_id])
        try:
            task_id, seed = spec["task_id"], spec["seed"]
            if hasattr(seed, "__index__") and not isinstance(seed, bool):
                seed = operator.index(seed)  # a numpy integer from a verl batch
            if self._threaded:
                opening = await asyncio.to_thread(episode.start, task_id, seed)
            else:
                opening = episode.start(task_id, seed)
        except BaseException:
            idle.append(episode)
            raise
        self._episodes[instance_id] = episode
        return instance_id, ToolResponse(text=opening)

    async def execute(
        self, instance_id: str, parameters: dict[str, Any], **kwargs: Any
    ) -> tuple[ToolResponse, float, dict[str, Any]]:
        """One ``interact_with_env`` call: the observation, the turn reward, metrics.

        A call after the episode ended answers the refusal text with reward 0 (the env is not
        stepped); a step that raises (an unavailable user) raises here and stays recorded in the
        episode's ``error``.
        """
        episode = self._episodes.get(instance_id)
        if episode is None:
            self.episode(instance_id)  # raises, naming the id
        if not isinstance(parameters, dict):
            parameters = {}
        try:
            if self._threaded:
                observation = await asyncio.to_thread(episode.act, parameters.get("choice"), parameters.get("content"))
            else:  # inline: the in-process scripted user never blocks, and a thread hop costs more than its step
                observation = episode.act(parameters.get("choice"), parameters.get("content"))
        except EpisodeOverError as refusal:
            return ToolResponse(text=str(refusal)), 0.0, {"episode_over": True}
        metrics = {
            "turn": len(episode.actions),
            "terminated": episode.terminated,
            "truncated": episode.truncated,
            "user_failure": bool(episode.user_failures),
        }
        return ToolResponse(text=observation), episode.rewards[-1], metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The episode's score so far: ``episode_score`` or the summed turn rewards (``settings.reward``)."""
        episode = self.episode(instance_id)
        return episode.episode_score if self.settings.reward == "episode_score" else episode.reward_sum

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Free ``instance_id``; its env waits for the next ``create`` (an unknown id is ignored)."""
        episode = self._episodes.pop(instance_id, None)
        if episode is None:
            return
        if episode.error is not None:  # an env whose step raised is not trusted again
            episode.close()
        else:
            self._idle[episode.recipe.env_id].append(episode)

    def close(self) -> None:
        """Close every env the tool holds, live or idle."""
        for episode in [*self._episodes.values(), *(e for idle in self._idle.values() for e in idle)]:
            episode.close()
        self._episodes.clear()
        for idle in self._idle.values():
            idle.clear()
