"""``mimesis-gym collect``: evaluation records turned into SFT conversations (docs/evaluation.md, "Collect").

The Base agent's data was made by running a strong agent several trials per task and keeping the
best trajectories; :func:`select_records` does the keeping and :func:`agent_conversation` /
:func:`user_conversation` write each kept record in the SFT format
(:class:`~mimesis_gym.algorithms.learners.sft.data.SFTExample`).

Selection, per ``(env_id, task_id)`` over the latest record of every key with status ``ok``: the
records scoring at least ``min_score`` (when given), ranked by episode score (higher first), then
fewer turns, then trial and seed; the first ``top_k`` (when given) are kept.

* ``side="agent"``: the agent's own conversation (``record.transcript``: system prompt, opening,
  its messages with their tool calls, the observations), the loss on the assistant turns.
* ``side="user"``: the user's turns of a record stored with ``--privileged``: after each agent
  turn, a user message ``<think>{thought}</think>{utterance}`` (the thought left out when the step
  has none); the agent turns are ``assistant`` messages with their public text; the task's opening
  is a user message with ``"train": false``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from mimesis_gym.algorithms.learners.sft.data import with_thought, write_examples
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.evaluation.records import EpisodeRecord
from mimesis_gym.evaluation.store import ResultsStore, skipped_note

__all__ = ["CollectError", "agent_conversation", "collect", "read_records", "select_records", "user_conversation"]

Side = Literal["agent", "user"]

logger = logging.getLogger(__name__)


class CollectError(ConfigurationError):
    """A user error of ``collect`` (missing run, records without what the side needs); one line."""


def read_records(
    run_dirs: Iterable[str | Path], *, skip_corrupt: bool = False, log: Callable[[str], None] | None = None
) -> list[EpisodeRecord]:
    """The latest record of every key of every run directory's ``episodes.jsonl``, runs in order.

    A corrupt line raises :class:`~mimesis_gym.evaluation.store.CorruptRecordError`; with
    ``skip_corrupt`` it is skipped and reported through ``log`` (default: a warning).
    """
    records: list[EpisodeRecord] = []
    for run_dir in map(Path, run_dirs):
        path = run_dir / "episodes.jsonl"
        if not path.is_file():
            raise CollectError(f"{run_dir} has no episodes.jsonl (pass a directory written by `mimesis-gym eval`)")
        store = ResultsStore(path, skip_corrupt=skip_corrupt)
        records += store.latest().values()
        if store.skipped:
            (log or logger.warning)(skipped_note(path, store.skipped))
    return records


def select_records(
    records: Sequence[EpisodeRecord], *, top_k: int | None = None, min_score: float | None = None
) -> list[EpisodeRecord]:
    """The kept records (see the module docstring), grouped by env and task in first-seen order."""
    groups: dict[tuple[str, str], list[EpisodeRecord]] = {}
    for record in records:
        if record.status != "ok" or (min_score is not None and record.episode_score < min_score):
            continue
        groups.setdefault((record.env_id, record.task_id), []).append(record)
    kept: list[EpisodeRecord] = []
    for group in groups.values():
        ranked = sorted(group, key=lambda r: (-r.episode_score, r.n_turns, r.trial, r.seed))
        kept += ranked if top_k is None else ranked[:top_k]
    return kept


def _meta(record: EpisodeRecord) -> dict[str, Any]:
    fields = ("env_id", "task_id", "trial", "seed", "agent", "user", "episode_score", "n_turns", "run_id", "key")
    return {name: getattr(record, name) for name in fields}


def _tools(record: EpisodeRecord) -> list[dict[str, Any]] | None:
    """The env's ``interact_with_env`` schema when the transcript holds tool calls."""
    if not any(message.get("tool_calls") for message in record.transcript):
        return None
    from mimesis_gym.core.actions import interact_with_env_tool
    from mimesis_gym.envs import ENV_TABLE

    env_class = ENV_TABLE.find(record.env_id).env_class()
    return [interact_with_env_tool(env_class.accepted_kinds, env_class.tool_description)]


def agent_conversation(record: EpisodeRecord) -> dict[str, Any]:
    """The agent's conversation of ``record`` as one SFT line (``side="agent"``)."""
    if not any(message.get("role") == "assistant" for message in record.transcript):
        raise CollectError(f"record {record.key} has no agent turn in its transcript")
    line: dict[str, Any] = {"messages": [dict(message) for message in record.transcript], "side": "agent"}
    tools = _tools(record)
    if tools:
        line["tools"] = tools
    line["meta"] = _meta(record)
    return line


def user_conversation(record: EpisodeRecord) -> dict[str, Any]:
    """The user's turns of ``record`` as one SFT line (``side="user"``); needs a ``--privileged`` record."""
    if record.privileged is None:
        raise CollectError(
            f"record {record.key} has no privileged turns: the user side needs runs of `mimesis-gym eval --privileged`"
        )
    turns = {int(turn["turn"]): turn for turn in record.privileged.get("turns", [])}
    opening = [m for m in record.transcript[: _first_assistant(record)] if m.get("role") == "user"]
    messages: list[dict[str, Any]] = [{**m, "train": False} for m in opening]
    for step in record.steps:
        action = f"[{step.action_kind}] {step.content}" if step.action_kind else step.content
        messages.append({"role": "assistant", "content": action})
        turn = turns.get(step.turn, {})
        utterance = turn.get("user_utterance")
        if utterance is None:
            continue  # no user reply at this step (e.g. the env ended it without the user)
        messages.append({"role": "user", "content": with_thought(str(utterance), turn.get("user_thought"))})
    if not any(m["role"] == "user" and m.get("train", True) for m in messages):
        raise CollectError(f"record {record.key} has no user reply to train on")
    return {"messages": messages, "side": "user", "meta": _meta(record)}


def _first_assistant(record: EpisodeRecord) -> int:
    for index, message in enumerate(record.transcript):
        if message.get("role") == "assistant":
            return index
    return len(record.transcript)


def collect(
    run_dirs: Sequence[str | Path],
    out: str | Path,
    *,
    side: Side = "agent",
    top_k: int | None = None,
    min_score: float | None = None,
    skip_corrupt: bool = False,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Write the kept records of ``run_dirs`` as SFT lines to ``out``; returns counts and the kept mean score.

    Without ``top_k`` and ``min_score`` the agent side keeps the best record per task (``top_k=1``)
    and the user side every record. Records the user side cannot use (no user reply) are skipped.
    ``skip_corrupt`` and ``log``: as for :func:`read_records`.
    """
    records = read_records(run_dirs, skip_corrupt=skip_corrupt, log=log)
    if side == "agent" and top_k is None and min_score is None:
        top_k = 1
    kept = select_records(records, top_k=top_k, min_score=min_score)
    build = agent_conversation if side == "agent" else user_conversation
    lines = []
    for record in kept:
        if side == "user" and record.privileged is None:
            build(record)  # raises: the run was not privileged
        try:
            lines.append(build(record))
        except CollectError:
            if side == "agent":
                raise
    if not lines:
        raise CollectError(f"no record of {', '.join(map(str, run_dirs))} passed the selection (status ok, scores)")
    write_examples(out, lines)
    scores = [line["meta"]["episode_score"] for line in lines]
    tasks = {(line["meta"]["env_id"], line["meta"]["task_id"]) for line in lines}
    return {
        "records": len(records),
        "written": len(lines),
        "tasks": len(tasks),
        "mean_score": sum(scores) / len(scores),
    }
