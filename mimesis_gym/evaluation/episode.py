"""The episode loop: one work unit played to its end as one :class:`~.records.EpisodeRecord`.

:class:`EpisodeRuntime` holds what a process's episodes share (the limits on episodes in flight,
agent calls and role calls; the user and judge models; the agents) and plays a unit with them. Agent,
user and env problems become the record's status, never an exception; only an unusable endpoint
(:class:`~mimesis_gym.core.errors.EndpointUnavailableError`) escapes and stops the run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import platform
import time
import traceback
from collections.abc import Sequence
from typing import Any

from mimesis_gym.agents.base import is_privileged
from mimesis_gym.agents.registry import make_agent
from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.core.actions import cap_action
from mimesis_gym.core.errors import EndpointUnavailableError
from mimesis_gym.core.redact import redact
from mimesis_gym.core.text import AGENT_TEXT_MAX_BYTES, map_strings, truncate_utf8
from mimesis_gym.envs.recipe import EnvRecipe
from mimesis_gym.evaluation.behavior_judge import judge_enactment
from mimesis_gym.evaluation.conditions import note_behavior
from mimesis_gym.evaluation.limited_model import LimitedModel
from mimesis_gym.evaluation.plan import EvalConfig, WorkUnit
from mimesis_gym.evaluation.records import EpisodeRecord, StepRecord, UserFailureRecord, utc_now
from mimesis_gym.users.registry import make_chat_model, resolve_user

__all__ = ["EpisodeRuntime", "RunParties"]


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
    started, clock = utc_now(), time.perf_counter()
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
        recipe = EnvRecipe(
            env_id=unit.env_id,
            user=user_model if user_model is not None else "scripted",
            env_kwargs={"judge": judge, "privileged": config.privileged, "user_behavior": unit.behavior, **kwargs},
        )
        env = recipe.build().unwrapped  # the async API is the env's own; the loop below caps the turns
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
    record.finished_at = utc_now()
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


class EpisodeRuntime:
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
