"""The evaluation presets: the main job and the paper's runs, every setting that differs from the defaults.

``mimesis-gym eval`` with no ``--agent`` applies :data:`MAIN_JOB`, ``mimesis-gym eval --paper --data-dir
<UserRL root>`` :data:`PAPER_EVAL`; explicit flags still override, setting by setting, and ``run.json``
records the preset (docs/evaluation.md, "The main job", "The paper's protocol"). From Python, a
preset is a dict of :class:`~mimesis_gym.evaluation.runner.EvalConfig` fields:
``EvalConfig(**MAIN_JOB)``, or ``EvalConfig(**{**MAIN_JOB, "limit": 3})``.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from mimesis_gym.agents.registry import RELEASED_AGENTS
from mimesis_gym.envs import ENV_TABLE

__all__ = [
    "DEMO_MAX_TURNS",
    "EVALUATION_USERS",
    "MAIN_JOB",
    "MAIN_JOB_AGENTS",
    "MAIN_JOB_BEHAVIORS",
    "MAIN_JOB_BEHAVIOR_AGENTS",
    "PAPER_EVAL",
    "main_job_settings",
    "paper_env_args",
    "paper_kwargs_by_env",
    "played_by_any",
]

MAIN_JOB_AGENTS = ("tiny", "scripted:baseline", "scripted:random", "oracle")
"""The agents ``mimesis-gym eval`` compares when no ``--agent`` is given: the embedded tiny model, the
fair scripted baseline, and the random floor and privileged oracle ceiling on the same tasks."""

MAIN_JOB_BEHAVIORS = ("control", "B3", "B9")
"""The main job's user conditions: control (the paper's table) and two hard users, refusing to clarify
(B3) and impatient (B9), for its robustness line (docs/behaviors.md)."""

MAIN_JOB_BEHAVIOR_AGENTS = ("scripted:baseline", "oracle")
"""The main job's agents that also meet the hard users: scripted, so the line costs about a second."""

DEMO_MAX_TURNS = 6
"""Turn cap of the main job. 8 turns measured 8 min 11 s with eight envs on 2 quiet cores
(``benchmarks/bench_demo.py``); above 8 minutes the cap is lowered, never the job's 10-minute bound raised."""

MAIN_JOB: dict[str, Any] = {
    "agents": list(MAIN_JOB_AGENTS),
    "users": ["scripted"],
    "limit": 2,
    "max_turns": DEMO_MAX_TURNS,
    "agent_max_tokens": 64,
    "constrained_actions": True,
    "user_behaviors": list(MAIN_JOB_BEHAVIORS),
    "behavior_agents": list(MAIN_JOB_BEHAVIOR_AGENTS),
    "preset": "main",
}
"""The main job, ``mimesis-gym eval`` with no ``--agent`` and no ``--paper`` (what ``make run`` runs):
the four agents of :data:`MAIN_JOB_AGENTS` on 2 test tasks of each of the paper's eight envs with
scripted users, 6 turns, 64-token agent turns decoded under the action grammar, and its robustness
line: :data:`MAIN_JOB_BEHAVIOR_AGENTS` also against the hard users of :data:`MAIN_JOB_BEHAVIORS`.
``EvalConfig(**MAIN_JOB)`` is the run ``mimesis-gym eval`` builds (``preset="main"`` in ``run.json``);
:func:`main_job_settings` lays other settings over it the way the command's flags do."""

ROBUSTNESS_LINE = ("user_behaviors", "behavior_agents")
"""The settings of :data:`MAIN_JOB` that go together: its hard users and the agents that meet them."""


def main_job_settings(given: Mapping[str, Any]) -> dict[str, Any]:
    """:data:`MAIN_JOB` with each setting of ``given`` (``None``: not given) in place of its own; the
    others stay (``limit=3`` keeps the 6 turns, the 64 tokens, the grammar and the robustness line).

    The robustness line is replaced as a whole: ``given`` ``user_behaviors``, or ``agents`` other than
    :data:`MAIN_JOB_AGENTS` (whose ``behavior_agents`` may not be in the run), drop both of its
    settings, and only what ``given`` states of them stands.
    """
    chosen = {key: value for key, value in given.items() if value is not None}
    settings = copy.deepcopy(MAIN_JOB)
    hard = played_by_any(chosen.get("envs") or ENV_TABLE.main_job(), MAIN_JOB_BEHAVIORS[1:])
    if "user_behaviors" in chosen or chosen.get("agents", settings["agents"]) != settings["agents"] or not hard:
        for key in ROBUSTNESS_LINE:
            del settings[key]
    else:
        settings["user_behaviors"] = [MAIN_JOB_BEHAVIORS[0], *hard]
    return {**settings, **chosen}


def played_by_any(envs: Sequence[str], behaviors: Sequence[str]) -> list[str]:
    """Those of ``behaviors`` that some env of ``envs`` plays (an unknown env plays none: the run's own
    check names it), so the main job's robustness line never refuses a run of other envs
    (``--envs function`` keeps only control)."""
    plays: set[str] = set()
    for name in envs:
        try:
            plays.update(ENV_TABLE.find(name).env_class().user_behaviors.applicable)
        except (ValueError, AttributeError):
            continue
    return [behavior for behavior in behaviors if behavior in plays]


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


def paper_kwargs_by_env() -> dict[str, dict[str, Any]]:
    """Env kwargs of the paper's runs, read from each env class's ``paper_kwargs`` when asked (not at
    import, so a broken plug-in cannot break importing the package): TelepathyGym and PersuadeGym take
    UserRL's reading of the agent's text, an empty ``[answer]``, untagged text
    (docs/env-contract.md, "The action grammar")."""
    return {
        entry.short: dict(entry.env_class().paper_kwargs)
        for entry in ENV_TABLE
        if entry.kind == "conversation" and entry.env_class().paper_kwargs
    }


def paper_env_args(envs: list[str], given: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The run's ``env_args`` under ``--paper``: :func:`paper_kwargs_by_env` for each env of ``envs``
    (canonical short names), with ``given`` (``--env-arg``) over them key by key; an env outside the run
    gets none."""
    paper = paper_kwargs_by_env()
    merged: dict[str, dict[str, Any]] = {env: dict(paper[env]) for env in envs if env in paper}
    for env, kwargs in given.items():
        merged.setdefault(env, {}).update(kwargs)
    return merged
