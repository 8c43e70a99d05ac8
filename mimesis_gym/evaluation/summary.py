"""Scoring a run's records into its summary: the paper's table, the other tables and the report files.

:func:`summarise` scores records with the paper's protocol; :func:`summarise_and_write` routes every
record to its table and writes the summary files; :func:`report_runs` does it over the records of
several runs (``mimesis-gym report``).
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.abcd_table import abcd_summaries
from mimesis_gym.evaluation.aggregate import env_score, mean_ranks, task_scores, weighted_avg
from mimesis_gym.evaluation.html_report import write_html_report
from mimesis_gym.evaluation.passk import pass_k_table
from mimesis_gym.evaluation.records import EpisodeRecord
from mimesis_gym.evaluation.report import write_summary
from mimesis_gym.evaluation.robustness import robustness_table
from mimesis_gym.evaluation.sections import Section, SummaryRow
from mimesis_gym.evaluation.store import ResultsStore, skipped_note
from mimesis_gym.users.registry import resolve_user

__all__ = ["all_user_failure_cells", "report_runs", "summarise", "summarise_and_write"]

logger = logging.getLogger(__name__)


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


def summarise_and_write(
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
    return summarise_and_write(list(records.values()), planned, chosen_mode or "exclude", judge, out, skipped)


def all_user_failure_cells(records: Sequence[EpisodeRecord]) -> list[tuple[str, str, str]]:
    """``(agent, user, env)`` cells whose every episode is a user failure (nothing in them was scored)."""
    statuses: dict[tuple[str, str, str], set[str]] = defaultdict(set)
    for record in records:
        statuses[(record.agent, record.user, record.env)].add(record.status)
    return [cell for cell, seen in statuses.items() if seen == {"user_failure"}]
