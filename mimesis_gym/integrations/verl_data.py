"""The files a verl run reads: the parquet prompts and the YAML configs (docs/integrations.md, "verl").

verl's multi-turn RL dataset (``RLHFDataset``) reads parquet rows with the columns ``prompt`` (a chat
list), ``data_source``, ``reward_model``, ``extra_info`` and, for the agent-loop rollout,
``agent_name``. :func:`write_dataset` writes one row per (env, task of a split, seed):

- ``prompt``: the env's system prompt and, as the user message, the episode's opening observation.
  verl renders the tool schema from the tool config through the model's chat template, so the
  prompt carries no schema text of its own. No privileged text enters a row.
- ``data_source``: the env id; ``agent_name``: ``mimesis_agent`` (the agent loop of
  ``mimesis_gym.integrations.verl_agent_loop``).
- ``reward_model``: ``{"style": "mimesis_env", "ground_truth": task id}`` (the env scores the
  episode; the task id is public).
- ``extra_info``: ``index``, ``split``, ``env_id``, ``task_id``, ``seed``,
  ``tools_kwargs.interact_with_env.create_kwargs`` and ``interaction_kwargs``, both holding
  ``{"env_id", "task_id", "seed"}``.

:class:`ToolSettings` is the ``config`` block of the tool in verl's tool YAML (which envs, which user,
env kwargs, turn limit, reward kind); :func:`write_configs` writes that YAML and the agent-loop
YAML. This module imports ``pyarrow`` and ``yaml`` lazily and never imports verl, so the data can be
prepared outside verl's environment.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from mimesis_gym.core.actions import ACTION_KINDS
from mimesis_gym.core.errors import ConfigurationError, validation_problems
from mimesis_gym.integrations.episode import TOOL_NAME, EnvRecipe, ToolEpisode

__all__ = [
    "AGENT_LOOP_NAME",
    "AGENT_LOOP_TARGET",
    "TOOL_CLASS",
    "ToolSettings",
    "combined_tool_schema",
    "dataset_rows",
    "write_configs",
    "write_dataset",
]

AGENT_LOOP_NAME = "mimesis_agent"
AGENT_LOOP_TARGET = "mimesis_gym.integrations.verl_agent_loop.MimesisAgentLoop"
TOOL_CLASS = "mimesis_gym.integrations.verl.MimesisTool"
DATA_STYLE = "mimesis_env"


class ToolSettings(BaseModel):
    """The ``config`` of the tool in verl's tool YAML (verl adds ``type: native``, ignored here).

    ``env_ids`` are the envs the tool serves (a row's ``create_kwargs.env_id`` must be one of them;
    with one env a row may omit it). ``user`` is a user alias (docs/users.md); ``env_kwargs`` go to
    ``gym.make`` of every env; ``reward`` picks what ``calc_reward`` returns: the env's
    ``episode_score`` or the summed turn rewards. ``step_in_thread`` runs resets and steps through
    ``asyncio.to_thread``: needed for users that call a server, a cost (~0.1-0.5 ms a step) for
    the in-process scripted user, hence off for it by default.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["native"] = "native"
    env_ids: list[str] = Field(min_length=1, description="The registered env ids the tool serves.")
    user: str = Field(default="scripted", description="A user alias.")
    env_kwargs: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments for gym.make.")
    max_episode_steps: int | None = Field(default=None, ge=1, description="Override of the registered turn limit.")
    reward: Literal["episode_score", "turn_rewards"] = "episode_score"
    step_in_thread: bool | None = Field(
        default=None,
        description="Run env resets and steps in a worker thread so a user's network call does not stall verl's "
        "event loop (default: yes for every user but the in-process 'scripted' one).",
    )

    @field_validator("env_ids")
    @classmethod
    def _distinct(cls, env_ids: list[str]) -> list[str]:
        if len(set(env_ids)) != len(env_ids):
            raise ConfigurationError(f"env_ids lists an env twice: {env_ids}")
        return env_ids

    @model_validator(mode="after")
    def _recipes_valid(self) -> ToolSettings:
        for env_id in self.env_ids:
            try:
                self.recipe(env_id)
            except ValidationError as error:
                raise ConfigurationError(validation_problems(error)) from None
        return self

    @property
    def threaded(self) -> bool:
        """Whether env resets and steps run in a worker thread (``step_in_thread``, else not for ``scripted``)."""
        return self.user != "scripted" if self.step_in_thread is None else self.step_in_thread

    def recipe(self, env_id: str) -> EnvRecipe:
        """The recipe of ``env_id`` (checked: registered, a conversation env, allowed kwargs)."""
        if env_id not in self.env_ids:
            raise ConfigurationError(
                f"env id {env_id!r} is not served by this tool (env_ids: {self.env_ids}); "
                "add it to the tool config's env_ids (mimesis-gym verl-data writes both from the same ids)"
            )
        return EnvRecipe(
            env_id=env_id, user=self.user, env_kwargs=self.env_kwargs, max_episode_steps=self.max_episode_steps
        )


def combined_tool_schema(schemas: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One ``interact_with_env`` schema for several envs.

    verl keys tools by name, so one tool serves every env of a run. With one distinct schema it is
    that schema; otherwise the choices are the union (in the canonical order) and the description
    says that the system prompt names the task's choices (an env answers a choice it does not
    accept with its grammar message, as it does in process).
    """
    distinct = [schema for i, schema in enumerate(schemas) if schema not in schemas[:i]]
    if not distinct:
        raise ConfigurationError("combined_tool_schema needs at least one schema")
    if len(distinct) == 1:
        return distinct[0]
    kinds = {kind for schema in distinct for kind in schema["function"]["parameters"]["properties"]["choice"]["enum"]}
    merged = {**distinct[0], "function": {**distinct[0]["function"]}}
    merged["function"]["description"] = (
        "Interact with the environment: talk to the user, search, answer or finish, "
        "as the system prompt of the task describes."
    )
    parameters = merged["function"]["parameters"]
    choice = {**parameters["properties"]["choice"], "enum": [kind for kind in ACTION_KINDS if kind in kinds]}
    merged["function"]["parameters"] = {**parameters, "properties": {**parameters["properties"], "choice": choice}}
    return merged


def dataset_rows(
    settings: ToolSettings, *, split: str, limit: int | None = None, seeds: Sequence[int] = (0,)
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The rows of ``split`` for every env of ``settings`` and the tool schema serving them.

    Tasks come in the pack's order, the first ``limit`` per env; a task's rows follow ``seeds``.
    Each row's episode is started once (with the settings' user; no shipped env calls its user to
    open an episode) to read its system prompt and opening observation.
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise ConfigurationError(f"limit must be a positive int or None; got {limit!r}")
    seeds = list(seeds)
    if not seeds or any(isinstance(seed, bool) or not isinstance(seed, int) for seed in seeds):
        raise ConfigurationError(f"seeds must be a non-empty sequence of ints; got {seeds!r}")
    rows: list[dict[str, Any]] = []
    schemas: list[dict[str, Any]] = []
    for env_id in settings.env_ids:
        episode = ToolEpisode(settings.recipe(env_id))
        try:
            schemas.append(episode.schema)
            try:
                tasks = episode.env.unwrapped.task_pack.pool(split)
            except ValueError as error:
                raise ConfigurationError(f"{env_id}: {error}") from None
            if not tasks:
                raise ConfigurationError(f"{env_id} has no tasks in split {split!r}")
            for task in tasks[:limit]:
                for seed in seeds:
                    opening = episode.start(task.id, seed)
                    rows.append(_row(env_id, task.id, seed, split, len(rows), episode.system_prompt, opening))
        finally:
            episode.close()
    return rows, combined_tool_schema(schemas)


def _row(env_id: str, task_id: str, seed: int, split: str, index: int, system: str, opening: str) -> dict[str, Any]:
    ids = {"env_id": env_id, "task_id": task_id, "seed": seed}
    return {
        "data_source": env_id,
        "agent_name": AGENT_LOOP_NAME,
        "prompt": [{"role": "system", "content": system}, {"role": "user", "content": opening}],
        "reward_model": {"style": DATA_STYLE, "ground_truth": task_id},
        "extra_info": {
            "index": index,
            "split": split,
            **ids,
            "tools_kwargs": {TOOL_NAME: {"create_kwargs": ids}},
            "interaction_kwargs": {"name": AGENT_LOOP_NAME, **ids},
        },
    }


def write_dataset(rows: Sequence[dict[str, Any]], path: str | Path) -> Path:
    """Write ``rows`` (from :func:`dataset_rows`) as one parquet file; return its path."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ConfigurationError(
            "writing verl's parquet files needs pyarrow: pip install 'mimesis-gym[verl]'"
        ) from None
    if not rows:
        raise ConfigurationError("no rows to write")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(list(rows)), path)
    return path


def write_configs(settings: ToolSettings, tool_schema: dict[str, Any], out: str | Path) -> tuple[Path, Path]:
    """Write ``tool_config.yaml`` (the tool, its settings and schema) and ``agent_loop.yaml`` into ``out``.

    Pass them to verl as ``actor_rollout_ref.rollout.multi_turn.tool_config_path`` and
    ``actor_rollout_ref.rollout.agent.agent_loop_config_path``.
    """
    import yaml

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tool_config = {
        "tools": [{"class_name": TOOL_CLASS, "config": settings.model_dump(mode="json"), "tool_schema": tool_schema}]
    }
    tool_path, loop_path = out / "tool_config.yaml", out / "agent_loop.yaml"
    tool_path.write_text(yaml.safe_dump(tool_config, sort_keys=False), encoding="utf-8")
    loop_path.write_text(
        yaml.safe_dump([{"name": AGENT_LOOP_NAME, "_target_": AGENT_LOOP_TARGET}], sort_keys=False), encoding="utf-8"
    )
    return tool_path, loop_path
