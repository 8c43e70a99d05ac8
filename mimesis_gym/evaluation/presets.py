"""The paper's evaluation preset: every setting that differs from the defaults.

``mimesis-gym eval --paper --data-dir <UserRL root>`` applies it; explicit flags still override, and
``run.json`` records the preset (docs/evaluation.md, "The paper's protocol").
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mimesis_gym.agents.registry import RELEASED_AGENTS

__all__ = ["EVALUATION_USERS", "PAPER_ENV_ARGS", "PAPER_EVAL", "paper_env_args"]

EVALUATION_USERS = (
    "gpt-5.6",
    "claude-opus-5",
    "claude-sonnet-5",
    "gemini-3.8-flash",
    "kimi-k3",
    "ditto-8b",
    "osim-8b",
    "humanlm-8b",
    "sotopia-7b",
)
"""The nine evaluation users of the paper's tables (docs/users.md, "Aliases")."""

PAPER_EVAL: dict[str, Any] = {
    "agents": list(RELEASED_AGENTS),
    "users": list(EVALUATION_USERS),
    "judge": None,  # J-self: the user model judges
    "trials": 1,  # pass@1
    "seed": 0,
    "max_turns": 16,
    "temperature": 0.0,
    "agent_max_tokens": 2048,
    "on_no_tool_call": "end",
    "user_failures": "include",
    "concurrency": 25,
    "step_timeout": 120.0,
    "user_kwargs": {"timeout_s": 35, "max_retries": 2, "json_mode": "off"},
}
"""Settings of the paper's runs; the data are the upstream UserRL test sets (``--data-dir``)."""

PAPER_ENV_ARGS: dict[str, dict[str, Any]] = {
    "telepathy": {"action_grammar": "userrl"},
    "persuade": {"action_grammar": "userrl"},
}
"""Env kwargs of the paper's runs: UserRL's reading of the agent's text where it differs from ours (an
empty ``[answer]``, untagged text; docs/env-contract.md, "The action grammar")."""


def paper_env_args(envs: list[str], given: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The run's ``env_args`` under ``--paper``: :data:`PAPER_ENV_ARGS` for each env of ``envs`` (canonical
    short names), with ``given`` (``--env-arg``) over them key by key; an env outside the run gets none."""
    merged: dict[str, dict[str, Any]] = {env: dict(PAPER_ENV_ARGS[env]) for env in envs if env in PAPER_ENV_ARGS}
    for env, kwargs in given.items():
        merged.setdefault(env, {}).update(kwargs)
    return merged
