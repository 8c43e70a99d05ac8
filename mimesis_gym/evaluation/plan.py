"""The run's config and its plan: what a run is, and the work units it plays.

The plan and the records: docs/evaluation.md, "Work units and records".

Every (agent, user) pair × condition × env × task × trial is a :class:`WorkUnit` with a stable key;
:func:`build_plan` lists them in order (and refuses a misconfigured run before anything plays).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.core.config import TOKENS_PLAUSIBLE, TURNS_PLAUSIBLE, ConfigModel, plausible_up_to
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.envs import ENV_TABLE, EnvEntry
from mimesis_gym.evaluation.conditions import ConditionPlan, plan_conditions, run_conditions
from mimesis_gym.evaluation.records import unit_key

__all__ = [
    "RUNNER_ENV_FLAGS",
    "RUNNER_ENV_KWARGS",
    "EvalConfig",
    "WorkUnit",
    "build_plan",
    "check_env_args",
    "check_recorded_units_planned",
    "condition_plan",
]


class EvalConfig(ConfigModel):
    """Everything that defines a run; stored in ``run.json`` and reused by ``--resume``.

    Numbers are range-checked (floats finite, :class:`~mimesis_gym.core.config.ConfigModel`; token
    budgets and turns above a plausible bound warn) and repeated names in ``agents``/``users``
    collapse to one, and so do repeated ``user_behaviors`` (written as the registry writes them,
    ``control`` added first when missing: :func:`~mimesis_gym.evaluation.conditions.run_conditions`).
    Each env of ``envs`` is written one way
    (:meth:`~mimesis_gym.envs.table.EnvTable.canonical_names`: a table env's short name, another
    registered env's id) and kept once, so an env named two ways (``turtle``, ``TURTLE``,
    ``mimesis/TurtleGym-v0``) is planned and played once.
    """

    envs: list[str] = Field(default_factory=ENV_TABLE.main_job, min_length=1, description="short names or ids")
    agents: list[str] = Field(default_factory=lambda: ["tiny"], min_length=1)
    users: list[str] = Field(default_factory=lambda: ["scripted"], min_length=1)
    judge: str | None = Field(None, description="None: each user judges itself (J-self)")
    trials: int = Field(1, ge=1)
    seed: int = Field(0, ge=0)
    split: str = "test"
    limit: int | None = Field(None, ge=1)
    max_turns: int = Field(16, ge=1, json_schema_extra=plausible_up_to(TURNS_PLAUSIBLE))
    concurrency: int = Field(8, ge=1)
    agent_concurrency: int | None = Field(None, ge=1)
    user_concurrency: int | None = Field(None, ge=1)
    step_timeout: float = Field(120.0, gt=0)
    agent_max_tokens: int = Field(2048, ge=1, json_schema_extra=plausible_up_to(TOKENS_PLAUSIBLE))
    temperature: float = Field(0.0, ge=0, le=2)
    role_max_tokens: int | None = Field(None, ge=1, json_schema_extra=plausible_up_to(TOKENS_PLAUSIBLE))
    user_failures: Literal["exclude", "include"] = "exclude"
    privileged: bool = False
    env_args: dict[str, dict[str, Any]] = Field(default_factory=dict)
    data_dir: str | None = Field(None, description="UserRL root: every env uses pack='upstream' from it")
    user_kwargs: dict[str, Any] = Field(default_factory=dict, description="overrides for every HTTP user")
    on_no_tool_call: Literal["grammar", "end"] = "grammar"
    constrained_actions: bool = Field(
        False, description="local agents decode under the action grammar; HTTP agents ask for structured outputs"
    )
    preset: str | None = None
    user_behaviors: list[str] = Field(
        default_factory=lambda: [CONTROL], description="conditions, each its own set of units; control first"
    )
    behavior_agents: list[str] | None = Field(
        None, description="the agents that play the conditions other than control (None: every agent)"
    )
    workers: int = Field(1, ge=1, description="worker processes (spawned); this process stays the only writer")
    ray_address: str | None = Field(None, description="run the workers as Ray actors on this cluster (extra `ray`)")

    @field_validator("agents", "users")
    @classmethod
    def _collapse_repeats(cls, names: list[str]) -> list[str]:
        return list(dict.fromkeys(name.strip() for name in names))

    @field_validator("user_behaviors")
    @classmethod
    def _conditions(cls, names: list[str]) -> list[str]:
        return run_conditions(names)

    @field_validator("envs")
    @classmethod
    def _canonical_envs(cls, names: list[str]) -> list[str]:
        return ENV_TABLE.canonical_names(names)

    @model_validator(mode="after")
    def _behavior_agents_are_agents(self) -> EvalConfig:
        if self.behavior_agents is not None:
            self.behavior_agents = list(dict.fromkeys(name.strip() for name in self.behavior_agents))
            strangers = [name for name in self.behavior_agents if name not in self.agents]
            if strangers:
                raise ValueError(
                    f"behavior_agents names {', '.join(strangers)}, not an agent of the run ({', '.join(self.agents)})"
                )
        return self

    def plays_condition(self, agent: str, condition: str) -> bool:
        """Whether ``agent`` plays ``condition`` in this run: control always, the others unless
        ``behavior_agents`` leaves the agent out."""
        return condition == CONTROL or self.behavior_agents is None or agent in self.behavior_agents

    def env_kwargs(self, env: str) -> dict[str, Any]:
        """The kwargs of env ``env`` (short name): upstream data when ``data_dir`` is set, then overrides."""
        kwargs: dict[str, Any] = {}
        if self.data_dir is not None:
            kwargs.update(pack="upstream", data_dir=self.data_dir)
        kwargs.update(self.env_args.get(env, {}))
        return kwargs


class WorkUnit(BaseModel):
    agent: str
    user: str
    env_id: str
    env: str
    task_id: str
    trial: int
    seed: int
    behavior: str = CONTROL

    @property
    def key(self) -> str:
        return unit_key(self.agent, self.user, self.env_id, self.task_id, self.trial, self.seed, self.behavior)


def _playable(name: str) -> EnvEntry:
    """The env-table entry of ``name``; ``ConfigurationError`` for an unknown name or a view env."""
    try:
        entry = ENV_TABLE.find(name, listed_kind="conversation")
    except ValueError as error:
        raise ConfigurationError(str(error)) from None
    if entry.kind != "conversation":
        raise ConfigurationError(
            f"{entry.id} is a {entry.kind} env, not a conversation env: text agents cannot play it "
            "(evaluate the conversation env it wraps instead)"
        )
    return entry


RUNNER_ENV_FLAGS = {
    "user": "--users",
    "judge": "--judge",
    "user_kwargs": "--user-arg",
    "privileged": "--privileged",
    "role_max_tokens": "--role-max-tokens",
    "user_behavior": "--user-behaviors",
}
"""Env kwargs the runner sets from its own flags (the flag of each); ``env_args`` may not set them."""
RUNNER_ENV_KWARGS = frozenset(RUNNER_ENV_FLAGS)


def check_env_args(config: EvalConfig) -> None:
    """``ConfigurationError`` for ``env_args`` naming an env outside the run or a key its env does not take."""
    planned = {entry.short: entry for entry in map(_playable, config.envs)}
    for env, kwargs in config.env_args.items():
        if env not in planned:
            raise ConfigurationError(f"--env-arg {env}.…: {env!r} is not an env of this run ({', '.join(planned)})")
        reserved = sorted(set(kwargs) & RUNNER_ENV_KWARGS)
        if reserved:
            flag = RUNNER_ENV_FLAGS[reserved[0]]
            raise ConfigurationError(f"--env-arg {env}.{reserved[0]}: set by the runner from its own flags: use {flag}")
        accepted = planned[env].env_class().init_kwarg_names()
        unknown = sorted(set(kwargs) - accepted)
        if unknown:
            raise ConfigurationError(
                f"--env-arg {env}.{unknown[0]}: {planned[env].id} takes no {unknown[0]!r}; it takes "
                f"{', '.join(sorted(accepted - RUNNER_ENV_KWARGS))}"
            )


def _ordered_envs(config: EvalConfig) -> list[EnvEntry]:
    """The run's env entries: the paper's column order, then the others in the order given."""
    return sorted((_playable(e) for e in config.envs), key=lambda entry: (entry.column is None, entry.column or 0))


def condition_plan(config: EvalConfig) -> ConditionPlan:
    """Which of ``config.user_behaviors`` each env plays (:func:`~.conditions.plan_conditions`)."""
    return plan_conditions(_ordered_envs(config), config.user_behaviors)


def build_plan(config: EvalConfig) -> tuple[list[WorkUnit], dict[str, int]]:
    """Every unit in order (pair × condition × env × task × trial) and the planned task counts.

    Envs come in the paper's column order, then the others in the order given; conditions in the
    run's order (control first), each on the envs that play it (:func:`condition_plan`).
    ``ConfigurationError`` (before anything runs) for an unknown env, a bad ``env_args`` entry, a
    split the env's pack lacks or a condition no env of the run plays.
    """
    check_env_args(config)
    ordered = _ordered_envs(config)
    played = plan_conditions(ordered, config.user_behaviors).played
    tasks: dict[str, list[str]] = {}
    for entry in ordered:
        kwargs = config.env_kwargs(entry.short)
        try:
            pool = entry.env_class().task_pack_for(kwargs).pool(config.split)
        except ValueError as error:
            raise ConfigurationError(f"{entry.id}: {error}") from None
        tasks[entry.short] = [task.id for task in pool][: config.limit]
    units = [
        WorkUnit(
            agent=agent,
            user=user,
            env_id=entry.id,
            env=entry.short,
            task_id=task_id,
            trial=trial,
            seed=config.seed + trial,
            behavior=condition,
        )
        for agent in config.agents
        for user in config.users
        for condition in config.user_behaviors
        if config.plays_condition(agent, condition)
        for entry in ordered
        if condition in played[entry.short]
        for task_id in tasks[entry.short]
        for trial in range(config.trials)
    ]
    return units, {short: len(ids) for short, ids in tasks.items()}


def check_recorded_units_planned(recorded: Iterable[str], units: Sequence[WorkUnit], out: Path) -> None:
    """Refuse to resume a run whose recorded episodes are not all in today's plan.

    Same config, different plan: a task pack changed under the run (for example ABCD's ``test``
    split took the paper's sizes; the earlier rows are split ``test_v1``). Mixing the two would
    score one table over two sets of tasks.
    """
    stray = sorted(set(recorded) - {unit.key for unit in units})
    if stray:
        raise ConfigurationError(
            f"{out}: {len(stray)} recorded episode(s) are not in this run's plan (first: {stray[0]}); its tasks "
            "changed since the run started (a newer task pack; ABCD's earlier held-out rows are split test_v1): "
            "start a new run, or resume on the split the run was made with"
        )
