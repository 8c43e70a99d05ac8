"""Run directories made of synthetic episode records, for the report page's tests.

:func:`synthetic_records` builds ``n`` valid :class:`~mimesis_gym.evaluation.records.EpisodeRecord`
objects, seeded, spread over real env short names, agents, user aliases and every status, with
steps (rewards and ``reward_parts``), a transcript holding tool calls, user failures and
privileged data. :func:`write_run` stores them as a run directory the way ``eval`` does (the
results store's serialisation, a ``run.json`` with the plan) and writes the summary and the report
page through ``report_runs`` — the code path of ``mimesis-gym report RUN_DIR``.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mimesis_gym.evaluation.records import EpisodeRecord, StepRecord, UserFailureRecord, unit_key
from mimesis_gym.evaluation.runner import report_runs
from mimesis_gym.evaluation.store import serialise_record

__all__ = ["ENVS", "synthetic_record", "synthetic_records", "write_run"]

ENVS = {"turtle": "mimesis/TurtleGym-v0", "function": "mimesis/FunctionGym-v0", "persuade": "mimesis/PersuadeGym-v0"}
AGENTS = ("oracle", "scripted:random", "tiny")
USERS = ("scripted", "mimesis-9b")
STATUSES = ("ok", "ok", "ok", "ok", "user_failure", "agent_error")


def synthetic_record(index: int, rng: random.Random, **overrides: Any) -> EpisodeRecord:
    """Episode ``index``: its unit from the index, its content drawn from ``rng``; ``overrides`` set fields."""
    env = list(ENVS)[index % len(ENVS)]
    agent = AGENTS[(index // len(ENVS)) % len(AGENTS)]
    user = USERS[(index // (len(ENVS) * len(AGENTS))) % len(USERS)]
    task_id = f"{env}-{index // (len(ENVS) * len(AGENTS) * len(USERS)):04d}"
    status = STATUSES[rng.randrange(len(STATUSES))]
    n_steps = rng.randint(1, 5)
    steps: list[StepRecord] = []
    transcript: list[dict[str, Any]] = [
        {"role": "system", "content": f"You play {env}. Use the tool interact_with_env."},
        {"role": "user", "content": f"Task {task_id}: find out what the user wants."},
    ]
    for turn in range(1, n_steps + 1):
        reward = round(rng.random(), 3)
        last = turn == n_steps
        arguments = json.dumps({"choice": "answer" if last else "action", "content": f"guess {turn} of {index}"})
        transcript += [
            {"role": "assistant", "content": f"<think>turn {turn}</think>", "tool_calls": [
                {"id": f"call_{turn}", "type": "function",
                 "function": {"name": "interact_with_env", "arguments": arguments}},
            ]},
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": f"reply {turn} to episode {index}"},
        ]  # fmt: skip
        steps.append(
            StepRecord(
                turn=turn,
                action_kind="answer" if last else "action",
                content=f"guess {turn} of {index}",
                valid_action=turn != 2,
                observation=f"reply {turn} to episode {index}",
                reward=reward,
                reward_parts={"answer_gain": reward, "step_penalty": -0.01},
                terminated=last,
                truncated=False,
                user_failure="user:timeout" if status == "user_failure" and last else None,
                agent_latency_s=rng.random(),
                step_latency_s=rng.random() / 10,
            )
        )
    failures = (
        [UserFailureRecord(turn=n_steps, role="user", kind="timeout", info_kind="timeout", detail="35 s", attempts=3)]
        if status == "user_failure"
        else []
    )
    fields: dict[str, Any] = {
        "run_id": "synthetic",
        "agent": agent,
        "user": user,
        "judge": "self",
        "env_id": ENVS[env],
        "env": env,
        "task_id": task_id,
        "trial": 0,
        "seed": 0,
        "key": unit_key(agent, user, ENVS[env], task_id, 0, 0),
        "status": status,
        "steps": steps,
        "rewards": [step.reward for step in steps],
        "n_turns": n_steps,
        "terminated": True,
        "episode_score": max(step.reward for step in steps) if status != "agent_error" else 0.0,
        "user_failures": failures,
        "usage": {"agent": {"calls": n_steps, "attempts": n_steps, "prompt_tokens": 100 * n_steps,
                            "completion_tokens": 20 * n_steps, "seconds": 0.5}},
        "transcript": transcript,
        "privileged": {
            "thoughts": [{"turn": 1, "role": "user", "call_index": 0, "thought": f"secret plan {index}"}],
            "hidden": {"answer": f"hidden answer {index}"},
            "turns": [{"turn": t, "user_thought": f"thinking {t}", "user_utterance": f"reply {t}", "judgements": {},
                       "thoughts": {}} for t in range(1, n_steps + 1)],
        },
        "error": "agent: http_error: 500 from the agent server" if status == "agent_error" else None,
        "duration_s": rng.random() * 30,
    }  # fmt: skip
    fields.update(overrides)
    return EpisodeRecord(**fields)


def synthetic_records(n: int, seed: int = 0) -> list[EpisodeRecord]:
    """``n`` records with distinct keys, the same ones for the same ``seed``."""
    rng = random.Random(seed)
    return [synthetic_record(index, rng) for index in range(n)]


def write_run(out: Path, records: Sequence[EpisodeRecord]) -> Path:
    """``out`` as a finished run of ``records`` (``episodes.jsonl``, ``run.json``, summary, report page)."""
    out.mkdir(parents=True, exist_ok=True)
    with (out / "episodes.jsonl").open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(serialise_record(record) + "\n")
    tasks: dict[str, set[str]] = {}
    for record in records:
        tasks.setdefault(record.env, set()).add(record.task_id)
    meta = {
        "run_id": "synthetic",
        "status": "complete",
        "plan": {"tasks": {env: len(ids) for env, ids in tasks.items()}},
        "config": {"max_turns": 16, "judge": None, "user_failures": "exclude"},
    }
    (out / "run.json").write_text(json.dumps(meta), encoding="utf-8")
    report_runs([out], out)
    return out
