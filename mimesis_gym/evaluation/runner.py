"""The async episode runner: plan, one coroutine per episode, crash-safe records.

The plan and the records: docs/evaluation.md, "Work units and records".

Every (agent, user) pair × env × task × trial is a work unit with a stable key. Episodes run as
asyncio coroutines under separate limits for episodes in flight, agent calls and role calls; each
finished episode is appended and fsynced to ``episodes.jsonl`` at once, so a killed run resumes
without loss (``resume=True`` skips finished keys and repairs a torn last line).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import json
import logging
import os
import platform
import signal
import sys
import time
import traceback
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

import gymnasium as gym
from pydantic import BaseModel, Field, field_validator, model_validator

import mimesis_gym
from mimesis_gym.agents.base import is_privileged
from mimesis_gym.agents.registry import make_agent
from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.core.actions import cap_action
from mimesis_gym.core.config import TOKENS_PLAUSIBLE, TURNS_PLAUSIBLE, ConfigModel, plausible_up_to
from mimesis_gym.core.errors import ConfigurationError, EndpointUnavailableError, unavailable_from_dict
from mimesis_gym.core.redact import redact
from mimesis_gym.core.text import AGENT_TEXT_MAX_BYTES, map_strings, truncate_utf8
from mimesis_gym.envs import ENV_TABLE, EnvEntry
from mimesis_gym.evaluation.abcd_table import abcd_summaries
from mimesis_gym.evaluation.aggregate import env_score, mean_ranks, task_scores, weighted_avg
from mimesis_gym.evaluation.behavior_judge import judge_enactment
from mimesis_gym.evaluation.conditions import ConditionPlan, note_behavior, plan_conditions, run_conditions
from mimesis_gym.evaluation.html_report import write_html_report
from mimesis_gym.evaluation.limited_model import LimitedModel
from mimesis_gym.evaluation.passk import pass_k_table
from mimesis_gym.evaluation.progress import EpisodeProgress, open_progress
from mimesis_gym.evaluation.ray_workers import run_units_on_ray
from mimesis_gym.evaluation.records import EpisodeRecord, StepRecord, UserFailureRecord, unit_key
from mimesis_gym.evaluation.report import write_summary
from mimesis_gym.evaluation.robustness import robustness_table
from mimesis_gym.evaluation.rundir import (
    DiskFullError,
    RunLock,
    check_resume_overrides,
    config_fingerprint,
    is_disk_full,
    stored_config,
    write_text_atomic,
)
from mimesis_gym.evaluation.sections import Section, SummaryRow
from mimesis_gym.evaluation.store import ResultsStore, parse_record, safe_strings, serialise_record, skipped_note
from mimesis_gym.users.registry import make_chat_model, resolve_user

__all__ = [
    "EvalConfig",
    "Interrupted",
    "RunParties",
    "WorkUnit",
    "all_user_failure_cells",
    "build_plan",
    "json_unit_player",
    "report_runs",
    "run_eval",
    "summarise",
    "unavailable_payload",
]

logger = logging.getLogger(__name__)


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


class Interrupted(Exception):
    """The run stopped on SIGINT/SIGTERM; finished episodes are recorded, the rest run on resume."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


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


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


async def _run_unit(
    unit: WorkUnit,
    config: EvalConfig,
    run_id: str,
    agent: Any,
    users: dict[str, Any],
    judge: Any,
    agent_semaphore: asyncio.Semaphore,
) -> EpisodeRecord:
    """Play one unit to its end; never raises for agent, user or env problems (they become statuses)."""
    started, clock = _now(), time.perf_counter()
    episode_id = hashlib.sha1(unit.key.encode()).hexdigest()[:16]
    user_model = users[unit.user]
    kwargs: dict[str, Any] = config.env_kwargs(unit.env)
    if config.role_max_tokens is not None:
        kwargs["role_max_tokens"] = config.role_max_tokens
    record = EpisodeRecord(
        run_id=run_id,
        agent=unit.agent,
        user=unit.user,
        judge=config.judge or "self",
        env_id=unit.env_id,
        env=unit.env,
        task_id=unit.task_id,
        trial=unit.trial,
        seed=unit.seed,
        key=unit.key,
        status="ok",
        started_at=started,
        worker=f"{platform.node()}:{os.getpid()}",
        user_behavior=unit.behavior,
    )
    env = None
    try:
        env = gym.make(
            unit.env_id,
            user=user_model if user_model is not None else "scripted",
            judge=judge,
            privileged=config.privileged,
            user_behavior=unit.behavior,
            **kwargs,
        ).unwrapped
        obs, info = await env.areset(seed=unit.seed, options={"task_id": unit.task_id, "episode_id": episode_id})
        record.max_score = float(env.task_max_score())
        note_behavior(record, info)
        conv = agent.start(env.system_prompt, env.tools, env.opening_messages)
        conv.env_id = unit.env_id
        if is_privileged(agent):
            conv.env = env
        record.score_context = env.score_context()
        agent_usage = {"calls": 0, "attempts": 0, "prompt_tokens": 0, "completion_tokens": 0, "seconds": 0.0}
        record.usage["agent"] = agent_usage
        privileged_turns: list[dict[str, Any]] = []
        for turn in range(config.max_turns):
            agent_clock = time.perf_counter()
            async with agent_semaphore:
                decision = await agent.act(conv, seed=unit.seed * 1000 + turn)
            agent_latency = time.perf_counter() - agent_clock
            agent_usage["calls"] += 1
            agent_usage["attempts"] += decision.usage.attempts
            agent_usage["prompt_tokens"] += decision.usage.prompt_tokens
            agent_usage["completion_tokens"] += decision.usage.completion_tokens
            agent_usage["seconds"] += agent_latency
            if decision.end:
                break
            if decision.failure is not None:
                if decision.failure.kind != "context_length":
                    record.status = "agent_error"
                    record.error = f"agent: {decision.failure.kind}: {decision.failure.detail}"
                break
            step_clock = time.perf_counter()
            try:
                obs, reward, terminated, _, info = await asyncio.wait_for(
                    env.astep(decision.action), timeout=config.step_timeout
                )
            except asyncio.TimeoutError:
                record.status = "user_failure"
                record.user_failures.append(
                    UserFailureRecord(turn=turn + 1, role="env", kind="step_timeout", info_kind="timeout")
                )
                break
            truncated = not terminated and turn + 1 >= config.max_turns
            agent.observe(conv, decision, obs)
            record.steps.append(
                StepRecord(
                    turn=info["turn"],
                    action_kind=info["action_kind"],
                    content=_content(_as_read(decision.action, info)),
                    valid_action=info["valid_action"],
                    constrained=decision.constrained,
                    observation=obs,
                    reward=reward,
                    reward_parts=info["reward_parts"],
                    terminated=terminated,
                    truncated=truncated,
                    user_failure=info["user_failure"],
                    agent_text_truncated=info["agent_text_truncated"],
                    agent_latency_s=agent_latency,
                    step_latency_s=time.perf_counter() - step_clock,
                )
            )
            record.episode_score = info["episode_score"]
            note_behavior(record, info)
            if config.privileged:
                privileged_turns.append(_privileged_turn(info))
            if info["user_failure"] and record.status == "ok":
                record.status = "user_failure"
            if terminated or truncated:
                record.terminated, record.truncated = terminated, truncated
                break
        record.transcript = [_recorded_message(message) for message in conv.messages]
        if unit.behavior != CONTROL and config.judge is not None and judge is not None:
            reading = await judge_enactment(
                judge, unit.behavior, env.user_exchanges, episode_id=episode_id, seed=unit.seed,
                role_max_tokens=config.role_max_tokens,
            )  # fmt: skip
            record.behavior_judged = None if reading is None else reading.enacted
        if config.privileged:
            record.privileged = {
                "thoughts": [t.to_dict() for t in env.thought_records],
                "hidden": (info.get("privileged") or {}).get("hidden", {}),
                "turns": privileged_turns,
            }
    except EndpointUnavailableError:
        raise  # a dead or misconfigured endpoint stops the run (run_eval), it is not an episode outcome
    except Exception as error:  # the env broke: reported apart, run again on resume
        record.status = "env_error"
        frame = traceback.extract_tb(error.__traceback__)[-1] if error.__traceback__ else None
        where = f" at {frame.filename}:{frame.lineno}" if frame else ""
        record.error = redact(f"{type(error).__name__}: {error}{where}")[:500]
    finally:
        if env is not None:
            env.close()
    record.rewards = [step.reward for step in record.steps]
    record.n_turns = len(record.steps)
    _collect_role_calls(record, [m for m in (user_model, judge) if isinstance(m, LimitedModel)], episode_id)
    record.finished_at = _now()
    record.duration_s = time.perf_counter() - clock
    return record


def _privileged_turn(info: dict[str, Any]) -> dict[str, Any]:
    """A step's privileged role outputs (``info["privileged"]`` without the task's hidden data)."""
    privileged = info.get("privileged") or {}
    return {"turn": info["turn"], **{key: value for key, value in privileged.items() if key != "hidden"}}


def _as_read(action: Any, info: dict[str, Any]) -> Any:
    """The agent's action as the env read it: cut (:func:`~mimesis_gym.core.actions.cap_action`) only when
    the step's info says the env cut it, so a turn under the cap is not measured a second time."""
    return action if info["agent_text_truncated"] is None else cap_action(action)[0]


def _recorded_message(message: dict[str, Any]) -> dict[str, Any]:
    """A message of the agent's conversation as its record keeps it: an agent message with every string
    cut to ``AGENT_TEXT_MAX_BYTES`` (the env read no more of the turn; docs/env-contract.md)."""
    if message.get("role") != "assistant":
        return message
    return map_strings(message, lambda text: truncate_utf8(text, AGENT_TEXT_MAX_BYTES))


def _content(action: Any) -> str:
    if isinstance(action, dict):
        content = action.get("content", "")
        return content if isinstance(content, str) else json.dumps(content)
    text = str(action).strip()
    if text.startswith("[") and "]" in text:
        return text[text.index("]") + 1 :].strip()
    return text


def _collect_role_calls(record: EpisodeRecord, models: Sequence[LimitedModel], episode_id: str) -> None:
    usage: dict[str, dict[str, Any]] = dict(record.usage)
    seen: set[int] = set()
    for model in models:
        if id(model) in seen:
            continue
        seen.add(id(model))
        for role, turn, reply, tier in model.calls.pop(episode_id, []):
            entry = usage.setdefault(
                role,
                {
                    "calls": 0,
                    "attempts": 0,
                    "prompt_tokens": 0,
                    "completion_tokens": 0,
                    "reasoning_tokens": 0,
                    "seconds": 0.0,
                    "json_tiers": {},
                },
            )
            entry["calls"] += 1
            entry["attempts"] += reply.usage.attempts
            entry["prompt_tokens"] += reply.usage.prompt_tokens
            entry["completion_tokens"] += reply.usage.completion_tokens
            entry["reasoning_tokens"] += reply.usage.reasoning_tokens
            entry["seconds"] += reply.usage.latency_s
            if tier is not None:
                entry["json_tiers"][str(tier)] = entry["json_tiers"].get(str(tier), 0) + 1
            if reply.failure is not None:
                record.user_failures.append(
                    UserFailureRecord(
                        turn=turn,
                        role=role,
                        kind=reply.failure.kind,
                        info_kind=reply.failure.info_kind,
                        detail=reply.failure.detail,
                        attempts=reply.failure.attempts,
                        status=reply.failure.status,
                    )
                )
    record.usage = usage


def _env_scores(scored: dict[str, list[tuple[str, float]]], columns: Sequence[str]) -> dict[str, float | None]:
    """×100 env scores from (task id, episode score) pairs per env; ``None`` when nothing was scored."""
    return {
        column: (env_score(task_scores(scored[column])) or 0.0) * 100 if scored.get(column) else None
        for column in columns
    }


def summarise(
    records: Sequence[EpisodeRecord],
    planned: dict[str, int],
    mode: str,
    judge: str | None,
    columns: Sequence[str] | None = None,
) -> list[Section]:
    """Sections (one per user) of rows (one per agent) scored with the paper's protocol.

    Both scoring modes are computed (``score_exclude``, ``score_include``); ``mode`` picks the
    headline. Every cell also carries its episode counts and user failures by ``role:kind``.
    ``columns`` defaults to the paper's columns that were planned, with Avg and MR; envs given as
    ``columns`` (those outside the paper's table) are scored the same way, without Avg or MR.
    """
    include: dict[tuple[str, str], dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    exclude: dict[tuple[str, str], dict[str, list[tuple[str, float]]]] = defaultdict(lambda: defaultdict(list))
    cells: dict[tuple[str, str], dict[str, dict[str, Any]]] = defaultdict(dict)
    users: list[str] = []
    agents: list[str] = []
    for record in records:
        users += [record.user] if record.user not in users else []
        agents += [record.agent] if record.agent not in agents else []
        pair = (record.user, record.agent)
        include[pair][record.env].append((record.task_id, record.episode_score))
        if record.status == "ok":
            exclude[pair][record.env].append((record.task_id, record.episode_score))
        cell = cells[pair].setdefault(
            record.env, {"n_episodes": 0, "n_user_failure_episodes": 0, "n_agent_error": 0, "n_env_error": 0,
                         "failures_by_kind": {}}
        )  # fmt: skip
        cell["n_episodes"] += 1
        if record.status == "user_failure":
            cell["n_user_failure_episodes"] += 1
            kinds = {f"{f.role}:{f.info_kind}" for f in record.user_failures} or {
                part for step in record.steps if step.user_failure for part in step.user_failure.split(";")
            }
            for kind in kinds:
                cell["failures_by_kind"][kind] = cell["failures_by_kind"].get(kind, 0) + 1
        elif record.status in ("agent_error", "env_error"):
            cell[f"n_{record.status}"] += 1
    sections = []
    ranked = columns is None
    scored = [c for c in ENV_TABLE.column_names() if c in planned] if columns is None else list(columns)
    for user in users:
        both = {agent: (_env_scores(exclude[(user, agent)], scored), _env_scores(include[(user, agent)], scored))
                for agent in agents}  # fmt: skip
        headline = {agent: both[agent][0 if mode == "exclude" else 1] for agent in agents}
        ranks = mean_ranks(headline, scored) if ranked else {}
        rows = []
        for agent in agents:
            avg, partial = weighted_avg(headline[agent], planned) if ranked else (None, False)
            mr, mr_partial = ranks.get(agent, (None, False))
            for cell in cells[(user, agent)].values():
                cell["user_failure_rate"] = cell["n_user_failure_episodes"] / cell["n_episodes"]
            rows.append(
                SummaryRow(agent=agent, label=agent, scores=headline[agent], score_exclude=both[agent][0],
                           score_include=both[agent][1], avg=avg, avg_partial=partial, mr=mr, mr_partial=mr_partial,
                           cells=cells[(user, agent)])
            )  # fmt: skip
        sections.append(Section(user=resolve_user(user).label, judge=judge or "self", rows=rows))
    return sections


def _summarise_and_write(
    records: Sequence[EpisodeRecord],
    planned: dict[str, int],
    mode: str,
    judge: str | None,
    out: Path,
    not_applicable: dict[str, dict[str, str]] | None = None,
) -> list[Section]:
    """Score the control condition's records into the paper's table, the table of other envs and the
    ABCD table (the env table says which env goes where), every condition's into the robustness and
    pass^k tables, and write the summary files; returns the paper's sections."""
    by_table: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        if record.user_behavior == CONTROL:
            by_table[ENV_TABLE.summary_table(record.env)].append(record)
    sections = summarise(by_table["paper"], planned, mode, judge)
    others = [env for env in planned if ENV_TABLE.summary_table(env) == "extra"]
    extra = summarise(by_table["extra"], planned, mode, judge, columns=others)
    labels = {record.user: resolve_user(record.user).label for record in records}
    abcd = abcd_summaries(by_table["abcd"], labels)
    weights = {env: n for env, n in planned.items() if ENV_TABLE.summary_table(env) == "paper"}
    robustness = robustness_table(records, mode, labels, not_applicable)
    pass_k = pass_k_table(records, mode, labels)
    write_summary(
        out, sections, mode=mode, weights=weights, abcd=abcd, extra=extra, robustness=robustness, pass_k=pass_k
    )
    write_html_report(out, records)
    return sections


def report_runs(
    run_dirs: Sequence[Path],
    out: Path,
    *,
    mode: str | None = None,
    force: bool = False,
    skip_corrupt: bool = False,
    log: Callable[[str], None] | None = None,
) -> list[Section]:
    """Merge the records of several runs into one summary (rows = agents, sections = users).

    Runs whose planned task counts or turn caps differ are refused unless ``force``. The robustness and
    pass^k tables are rebuilt from the records as ``eval`` built them. A corrupt line
    of a run's ``episodes.jsonl`` raises :class:`~mimesis_gym.evaluation.store.CorruptRecordError`;
    with ``skip_corrupt`` it is skipped and reported through ``log`` (default: a warning).
    """
    records: dict[str, EpisodeRecord] = {}
    planned: dict[str, int] = {}
    not_applicable: dict[str, dict[str, str]] = {}
    reference: tuple[dict[str, int], int] | None = None
    judge = None
    chosen_mode = mode
    for run_dir in run_dirs:
        meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
        identity = (meta["plan"]["tasks"], meta["config"]["max_turns"])
        if reference is not None and identity != reference and not force:
            raise ValueError(f"{run_dir} differs from the first run in its task plan or turn cap (use --force)")
        reference = reference or identity
        planned.update(meta["plan"]["tasks"])
        for condition, envs in meta["plan"].get("not_applicable", {}).items():
            not_applicable.setdefault(condition, {}).update(envs)
        judge = judge or meta["config"].get("judge")
        chosen_mode = chosen_mode or meta["config"].get("user_failures", "exclude")
        store = ResultsStore(run_dir / "episodes.jsonl", skip_corrupt=skip_corrupt)
        records.update(store.latest())
        if store.skipped:
            (log or logger.warning)(skipped_note(store.path, store.skipped))
    played = {record.user_behavior for record in records.values()}
    skipped = {condition: envs for condition, envs in not_applicable.items() if condition in played}
    return _summarise_and_write(list(records.values()), planned, chosen_mode or "exclude", judge, out, skipped)


def unavailable_payload(error: EndpointUnavailableError) -> str:
    """How a worker tells the coordinator that an endpoint is unusable (JSON, never pickled)."""
    return json.dumps({"unavailable": error.to_dict()})


def is_unavailable_payload(payload: str) -> bool:
    """Whether a worker's reply is :func:`unavailable_payload` rather than a record."""
    return payload.startswith('{"unavailable"')


def _write_run_json(out: Path, meta: dict[str, Any]) -> None:
    """``run.json``, written whole or not at all; its strings redacted (argv, config and errors may name a
    spec whose URL holds a credential)."""
    write_text_atomic(out / "run.json", json.dumps(safe_strings(meta), indent=2, sort_keys=True, default=str) + "\n")


def _stopped_by_full_disk(out: Path, error: OSError) -> DiskFullError:
    """Mark the run ``interrupted`` in ``run.json`` where that can still be written; the one-line error."""
    where = str(error.filename) if error.filename is not None else None
    failed = f"disk full (no space left on device) writing {where or f'into {out}'}"
    if not (out / "run.json").is_file():
        return DiskFullError(
            f"{failed}; run.json could not be written; free space, delete {out} and run again", path=where, marked=False
        )
    status = None
    try:
        meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
        status = meta.get("status")
        meta.update(status="interrupted", finished_at=_now(), error=failed)
        _write_run_json(out, meta)
        state, marked = "run.json marked interrupted", True
    except (OSError, ValueError):
        state, marked = "run.json could not be updated" + (f" (it still says {status!r})" if status else ""), False
    return DiskFullError(
        f"{failed}; {state}; free space and rerun with --resume (--out {out})", path=where, marked=marked
    )


class RunParties:
    """The user, judge and agent objects of a run, built from its config (cheap: models load lazily)."""

    def __init__(self, users: dict[str, Any], judge: Any, agents: dict[str, Any], judge_alias: str | None) -> None:
        self.users = users
        self.judge = judge
        self.agents = agents
        self.judge_alias = judge_alias

    @classmethod
    def build(cls, config: EvalConfig) -> RunParties:
        """Resolve every alias of ``config``; a malformed one raises ``ConfigurationError`` here."""
        users = {}
        for alias in config.users:
            overrides = config.user_kwargs if resolve_user(alias).kind == "http" else {}
            users[alias] = make_chat_model(alias, **overrides)
        judge = make_chat_model(config.judge, party="judge") if config.judge is not None else None
        agents = {
            alias: make_agent(
                alias,
                max_tokens=config.agent_max_tokens,
                temperature=config.temperature,
                on_no_tool_call=config.on_no_tool_call,
                constrained=config.constrained_actions,
            )
            for alias in config.agents
        }
        return cls(users, judge, agents, config.judge)

    def probes(self) -> list[tuple[str, str, Any]]:
        """``(party, alias, object)`` for the pre-flight."""
        entries = [("user", alias, model) for alias, model in self.users.items()]
        if self.judge_alias is not None:
            entries.append(("judge", self.judge_alias, self.judge))
        entries += [("agent", alias, agent) for alias, agent in self.agents.items()]
        return entries


class _Runtime:
    """The shared pieces of a process's episodes: limits, user/judge models and agents.

    With ``workers`` processes, each gets its share of the per-run limits (docs/evaluation.md, "Concurrency").
    """

    def __init__(self, config: EvalConfig, workers: int, parties: RunParties | None = None) -> None:
        share = max(1, workers)
        self.config = config
        parties = parties or RunParties.build(config)
        self.episodes = asyncio.Semaphore(max(1, config.concurrency // share))
        self.agent_calls = asyncio.Semaphore(max(1, (config.agent_concurrency or config.concurrency) // share))
        user_calls = asyncio.Semaphore(max(1, (config.user_concurrency or 2 * config.concurrency) // share))
        self.users: dict[str, Any] = {
            alias: None if model is None else LimitedModel(model, user_calls) for alias, model in parties.users.items()
        }
        self.judge: Any = None  # J-self: the user's model judges (scripted users get scripted judges)
        if config.judge is not None:
            self.judge = "scripted" if parties.judge is None else LimitedModel(parties.judge, user_calls)
        self.agents = parties.agents

    async def run(self, unit: WorkUnit, run_id: str) -> EpisodeRecord:
        return await _run_unit(
            unit, self.config, run_id, self.agents[unit.agent], self.users, self.judge, self.agent_calls
        )


def json_unit_player(config_json: str, run_id: str, workers: int) -> Callable[[str], Awaitable[str]]:
    """``play(unit_json) -> record_json`` for a worker process or Ray actor of a run of ``workers``.

    The process's runtime (its share of the limits, the user/judge models, the agents) is built at
    the first call, on the event loop of that call.
    """
    config = EvalConfig.model_validate_json(config_json)
    runtime: _Runtime | None = None

    async def play(unit_json: str) -> str:
        nonlocal runtime
        if runtime is None:
            runtime = _Runtime(config, workers)
        try:
            record = await runtime.run(WorkUnit.model_validate_json(unit_json), run_id)
        except EndpointUnavailableError as error:  # the coordinator raises it and stops the run
            return unavailable_payload(error)
        return serialise_record(record)

    return play


def _worker_main(config_json: str, run_id: str, units: Any, results: Any, workers: int) -> None:
    """A worker process: pull units until the sentinel, push each record back as JSON."""
    lanes = max(1, EvalConfig.model_validate_json(config_json).concurrency // workers)
    play = json_unit_player(config_json, run_id, workers)

    async def lane() -> None:
        while True:
            payload = await asyncio.to_thread(units.get)
            if payload is None:
                return
            result = await play(payload)
            await asyncio.to_thread(results.put, result)
            if is_unavailable_payload(result):
                return

    async def loop() -> None:
        await asyncio.gather(*(lane() for _ in range(lanes)))

    asyncio.run(loop())


class _Sink:
    """The coordinator's side of scale-out: append each record from a worker, count it, show the progress."""

    def __init__(
        self, store: ResultsStore, counts: dict[str, int], progress: EpisodeProgress | None, stop: asyncio.Event
    ) -> None:
        self.store, self.counts, self.progress, self.stop = store, counts, progress, stop

    async def accept(self, payload: str) -> bool:
        """Store one record sent as JSON by a worker; False once a drain has been requested.

        A worker that met an unusable endpoint sends :func:`unavailable_payload` instead: raised here.
        """
        if is_unavailable_payload(payload):
            raise unavailable_from_dict(json.loads(payload)["unavailable"])
        return await self.add(parse_record(payload))

    async def add(self, record: EpisodeRecord) -> bool:
        """Store one record; False once a drain has been requested."""
        await self.store.append(record)
        self.counts[record.status] += 1
        if self.progress is not None:
            self.progress.finished(record)
        return not self.stop.is_set()


async def _run_in_workers(config: EvalConfig, todo: Sequence[WorkUnit], run_id: str, sink: _Sink) -> None:
    """Spread units over ``config.workers`` spawned processes; this process stays the only writer."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    units, results = context.Queue(), context.Queue()
    for unit in todo:
        units.put(unit.model_dump_json())
    lanes = max(1, config.concurrency // config.workers)
    for _ in range(config.workers * lanes):
        units.put(None)
    processes = [
        context.Process(target=_worker_main, args=(config.model_dump_json(), run_id, units, results, config.workers))
        for _ in range(config.workers)
    ]
    for process in processes:
        process.start()
    finished = False
    try:
        for _ in range(len(todo)):
            if not await sink.accept(await asyncio.to_thread(results.get)):
                break
        finished = not sink.stop.is_set()
    finally:
        for process in processes:
            if not finished:
                process.terminate()
            process.join(timeout=30)


async def _run_on_ray(config: EvalConfig, todo: Sequence[WorkUnit], run_id: str, sink: _Sink) -> None:
    """The same loop in ``config.workers`` Ray actors on the cluster at ``config.ray_address``."""
    await run_units_on_ray(
        config.ray_address or "auto",
        json_unit_player,
        (config.model_dump_json(), run_id, config.workers),
        [unit.model_dump_json() for unit in todo],
        actors=config.workers,
        lanes=max(1, config.concurrency // config.workers),
        accept=sink.accept,
    )


async def run_eval(
    config: EvalConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    argv: Sequence[str] = (),
    handle_signals: bool = False,
    drain_timeout: float = 60.0,
    preflight: bool = True,
    log: Callable[[str], None] | None = None,
    skip_corrupt: bool = False,
) -> tuple[list[Section], dict[str, int]]:
    """Run (or resume) an evaluation into ``out``; returns the summary sections and status counts.

    Before anything is written, ``preflight`` probes every user, judge and agent endpoint
    (:mod:`~mimesis_gym.evaluation.preflight`) and raises the first unusable one's
    :class:`~mimesis_gym.core.errors.EndpointUnavailableError`. The run holds a lock on ``out``
    while it runs (:class:`~mimesis_gym.evaluation.rundir.RunLock`;
    :class:`~mimesis_gym.evaluation.rundir.RunInUseError` for a second process), and ``run.json``
    stores the config's fingerprint; a resume refuses a config that differs from the stored one
    other than in :data:`~mimesis_gym.evaluation.rundir.RESUME_ADJUSTABLE` settings.

    A resume reads the records already in ``out``: a corrupt line (not a torn last one, which is cut)
    raises :class:`~mimesis_gym.evaluation.store.CorruptRecordError` before anything is written; with
    ``skip_corrupt`` such lines are skipped (their episodes play again), reported through ``log``
    and listed in ``run.json``'s resume entry (``skipped_corrupt_lines``).

    A full disk (``ENOSPC`` on any write: a record, ``run.json``, the summary or ``report.html``) stops
    the run: running episodes are cancelled (not recorded), the record being written is cut back, no
    ``*.tmp`` file is left, ``run.json`` is marked ``interrupted`` where it can still be written, and
    :class:`~mimesis_gym.evaluation.rundir.DiskFullError` says what failed and how to go on
    (``--resume`` once there is space).

    An endpoint that becomes unusable mid-run (one never probed, e.g. with ``preflight=False``)
    stops the run: running episodes are cancelled (not recorded), ``run.json`` gets status
    ``failed`` and the error propagates; ``--resume`` continues once the endpoint is fixed.

    With ``handle_signals``, the first SIGINT/SIGTERM starts no new episode, lets running ones
    finish for up to ``drain_timeout`` seconds, cancels the rest (not recorded), writes the summary
    and ``run.json`` with status ``interrupted`` and raises :class:`Interrupted`; a second signal
    cancels at once. Signals stay handled until ``run.json`` is written.
    """
    units, planned = build_plan(config)
    conditions = condition_plan(config)
    parties = RunParties.build(config)
    if config.ray_address not in (None, "auto", "local"):
        from mimesis_gym.evaluation.ray_workers import check_reachable

        check_reachable(config.ray_address)
    if preflight:
        from mimesis_gym.evaluation.preflight import run_preflight

        for result in await run_preflight(parties.probes()):
            (log or logger.info)(result.line())
    out.mkdir(parents=True, exist_ok=True)
    with RunLock(out):
        try:
            return await _run_locked(
                config, out, units, planned, conditions, parties, resume=resume, progress=progress, argv=argv,
                handle_signals=handle_signals, drain_timeout=drain_timeout, skip_corrupt=skip_corrupt, log=log,
            )  # fmt: skip
        except OSError as error:
            if not is_disk_full(error):
                raise
            raise _stopped_by_full_disk(out, error) from error


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


async def _run_locked(
    config: EvalConfig,
    out: Path,
    units: list[WorkUnit],
    planned: dict[str, int],
    conditions: ConditionPlan,
    parties: RunParties,
    *,
    resume: bool,
    progress: bool,
    argv: Sequence[str],
    handle_signals: bool,
    drain_timeout: float,
    skip_corrupt: bool,
    log: Callable[[str], None] | None,
) -> tuple[list[Section], dict[str, int]]:
    stop = asyncio.Event()
    received: list[int] = []
    tasks: list[asyncio.Future[None]] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()
        if len(received) > 1:  # a second signal: cancel at once
            for task in tasks:
                task.cancel()

    store = ResultsStore(out / "episodes.jsonl", skip_corrupt=skip_corrupt)
    config_json = safe_strings(config.model_dump(mode="json"))  # as run.json keeps it: no key, no URL credential
    meta: dict[str, Any]
    if resume:
        check_resume_overrides(stored_config(out), config_json)
        meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
        store.repair()
        meta.setdefault("resumes", [])
    else:
        if (out / "run.json").exists():
            raise ConfigurationError(f"{out} already holds a run; continue it with --resume or use another --out")
        meta = {"schema_version": 1, "run_id": uuid.uuid4().hex, "created_at": _now(), "resumes": []}
    meta.update(
        status="running", command=list(argv), config=config_json, config_fingerprint=config_fingerprint(config_json),
        plan={"units": len(units), "tasks": planned, "agents": config.agents, "users": config.users,
              "user_behaviors": config.user_behaviors, "not_applicable": conditions.skipped},
        versions={"mimesis_gym": mimesis_gym.__version__, "python": sys.version.split()[0],
                  "gymnasium": gym.__version__},
        host={"platform": platform.platform(), "cpus": os.cpu_count()},
    )  # fmt: skip
    meta.pop("error", None)
    finished = store.finished_keys()
    if resume:
        check_recorded_units_planned(store.latest(), units, out)
    todo = [unit for unit in units if unit.key not in finished]
    if resume:
        meta["resumes"].append({"at": _now(), "skipped": len(units) - len(todo), "run": len(todo)})
        if store.skipped:
            meta["resumes"][-1]["skipped_corrupt_lines"] = list(store.skipped)
            (log or logger.warning)(f"{skipped_note(store.path, store.skipped)}; their episodes play again")
    _write_run_json(out, meta)
    if (skipped_pairs := conditions.summary_line()) is not None:
        (log or logger.info)(skipped_pairs)

    loop = asyncio.get_running_loop()
    if handle_signals:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
    bar = open_progress(progress, total=len(units), done=len(units) - len(todo))
    counts: dict[str, int] = defaultdict(int)
    sink = _Sink(store, counts, bar, stop)
    if config.ray_address is not None and todo:
        tasks.append(asyncio.ensure_future(_run_on_ray(config, todo, meta["run_id"], sink)))
    elif config.workers > 1 and todo:
        tasks.append(asyncio.ensure_future(_run_in_workers(config, todo, meta["run_id"], sink)))
    elif todo:
        runtime = _Runtime(config, workers=1, parties=parties)  # the models play here only in one process

        async def one(unit: WorkUnit) -> None:
            async with runtime.episodes:
                if stop.is_set():
                    return
                record = await runtime.run(unit, meta["run_id"])
            await sink.add(record)

        tasks.extend(asyncio.ensure_future(one(unit)) for unit in todo)
    everything = asyncio.ensure_future(asyncio.gather(*tasks))
    try:
        try:
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({everything, stopper}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if not everything.done():
                try:
                    await asyncio.wait_for(asyncio.shield(everything), timeout=drain_timeout)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    await _cancel_all(tasks, everything)
            elif everything.exception() is not None:
                raise everything.exception()  # type: ignore[misc]
        except EndpointUnavailableError as error:
            await _cancel_all(tasks, everything)
            meta.update(status="failed", finished_at=_now(), error=str(error))
            _write_run_json(out, meta)
            raise
        except OSError:  # e.g. a full disk: stop every episode, then run_eval reports it
            await _cancel_all(tasks, everything)
            raise
        finally:
            if bar is not None:
                bar.close()
        records = list(store.latest().values())
        sections = _summarise_and_write(records, planned, config.user_failures, config.judge, out, conditions.skipped)
        totals: dict[str, int] = defaultdict(int)
        for record in records:
            totals[record.status] += 1
        errors = totals.get("agent_error", 0) + totals.get("env_error", 0)
        status = "interrupted" if received else "complete_with_errors" if errors else "complete"
        meta.update(status=status, finished_at=_now(), counts=dict(totals))
        _write_run_json(out, meta)
    finally:
        if handle_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
    if received:
        raise Interrupted(received[0])
    return sections, dict(totals)


async def _cancel_all(tasks: Sequence[asyncio.Future[None]], everything: asyncio.Future[Any]) -> None:
    """Cancel ``tasks`` and wait for them; ``everything`` (their gather) is awaited too, so that its
    ``CancelledError`` counts as retrieved and asyncio prints no "exception was never retrieved"
    traceback after the run's "interrupted" line."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(everything, return_exceptions=True)


def all_user_failure_cells(records: Sequence[EpisodeRecord]) -> list[tuple[str, str, str]]:
    """``(agent, user, env)`` cells whose every episode is a user failure (nothing in them was scored)."""
    statuses: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for record in records:
        statuses[(record.agent, record.user, record.env)].add(record.status)
    return [cell for cell, seen in statuses.items() if seen == {"user_failure"}]
