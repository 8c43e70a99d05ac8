"""Evaluation records (docs/evaluation.md, "Work units and records"): one JSON object per finished episode."""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from pydantic import BaseModel, Field

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.core.redact import redact_url_credentials

__all__ = ["EpisodeRecord", "StepRecord", "UserFailureRecord", "unit_key", "utc_now"]

Status = Literal["ok", "user_failure", "agent_error", "env_error"]


def utc_now() -> str:
    """The current UTC time as records and ``run.json`` write it (ISO 8601, to the second)."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def unit_key(agent: str, user: str, env_id: str, task_id: str, trial: int, seed: int, behavior: str = CONTROL) -> str:
    """``agent|user|env_id|task_id|trial|seed``, then ``|behavior`` for a condition other than control:
    the identity of a work unit, as records store it (a credential inside the URL of a user or agent
    redacted, so that a resume finds the units its records hold). A control unit's key is the one runs
    made before ``--user-behaviors`` existed, so they resume."""
    suffix = "" if behavior == CONTROL else f"|{behavior}"
    return redact_url_credentials(f"{agent}|{user}|{env_id}|{task_id}|{trial}|{seed}{suffix}")


class StepRecord(BaseModel):
    turn: int
    action_kind: str | None
    content: str
    valid_action: bool
    constrained: bool = False
    """The agent decoded this action under the action grammar (docs/evaluation.md, "Constrained actions")."""
    observation: str
    reward: float
    reward_parts: dict[str, Any]
    terminated: bool
    truncated: bool
    user_failure: str | None
    agent_text_truncated: int | None = None
    """The agent's turn was cut to ``AGENT_TEXT_MAX_BYTES``: its size in UTF-8 bytes before (``info``'s key)."""
    agent_latency_s: float = 0.0
    step_latency_s: float = 0.0


class UserFailureRecord(BaseModel):
    turn: int
    role: str
    kind: str
    info_kind: str
    detail: str = ""
    attempts: int = 0
    status: int | None = None


class EpisodeRecord(BaseModel):
    """A finished episode; the last record of a key wins."""

    schema_version: int = 1
    run_id: str
    agent: str
    user: str
    judge: str
    env_id: str
    env: str
    task_id: str
    trial: int
    seed: int
    key: str
    status: Status
    steps: list[StepRecord] = Field(default_factory=list)
    rewards: list[float] = Field(default_factory=list)
    n_turns: int = 0
    terminated: bool = False
    truncated: bool = False
    score_context: dict[str, Any] = Field(default_factory=dict)
    episode_score: float = 0.0
    user_failures: list[UserFailureRecord] = Field(default_factory=list)
    usage: dict[str, Any] = Field(default_factory=dict)
    transcript: list[dict[str, Any]] = Field(default_factory=list)
    privileged: dict[str, Any] | None = None
    error: str | None = None
    started_at: str = ""
    finished_at: str = ""
    duration_s: float = 0.0
    worker: str = ""
    user_behavior: str = CONTROL
    """The condition the user played (``eval --user-behaviors``); records made before it existed: control."""
    behavior_enacted: bool | None = None
    """Whether the env's check found the behaviour in the episode (its last ``info["user_behavior"]``);
    ``None`` under control and where the episode never reached the env."""
    behavior_turns: list[int] = Field(default_factory=list)
    """The turns the behaviour showed in."""
    behavior_judged: bool | None = None
    """The judge model's reading (``eval --judge``): whether it saw the behaviour; ``None`` under
    control, without a judge, or when the judge failed (docs/behaviors.md, "Was it enacted?")."""
    max_score: float | None = None
    """The task's best reachable episode score (``env.task_max_score()`` at reset): an episode succeeded
    when it reached it (pass^k); ``None`` where the env never reset and in older records."""
