"""Summary tables in the paper's layout (docs/evaluation.md, "Scoring"), here from a table of env scores.

``mimesis-gym report --from-scores FILE.csv --out DIR`` recomputes Avg and MR from per-env scores
(×100 as displayed), the way a user checks a published table or sets a new row beside it, and
writes ``summary.json``, ``summary.csv``, ``summary.md`` and ``report.html``.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from mimesis_gym.agents.registry import RELEASED_AGENTS
from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.abcd_table import AbcdSummary, abcd_markdown
from mimesis_gym.evaluation.aggregate import display, mean_ranks, paper_deltas, released_alias, weighted_avg
from mimesis_gym.evaluation.html_report import write_html_report
from mimesis_gym.evaluation.passk import PassKTable, pass_k_markdown
from mimesis_gym.evaluation.plots import write_plots, write_robustness_plot
from mimesis_gym.evaluation.robustness import RobustnessTable, robustness_markdown
from mimesis_gym.evaluation.rundir import write_text_atomic
from mimesis_gym.evaluation.sections import Section, SummaryRow

__all__ = ["delta_table", "read_scores_csv", "report_from_scores", "write_summary"]

DAGGER_RATE = 0.05
"""A cell whose user-failure episode rate reaches this is marked †."""
CSV_FIELDS = (
    "user", "judge", "agent", "column", "value", "score_include", "score_exclude", "n_tasks", "n_tasks_scored",
    "n_episodes", "n_user_failure_episodes", "user_failure_rate", "n_agent_error", "n_env_error",
)  # fmt: skip
RANKED = ("avg", "mr")
"""The two columns after the paper's env columns."""


def read_scores_csv(path: Path) -> list[dict[str, Any]]:
    """Rows of ``user, agent, <the paper's columns>[, judge, label]``; an empty cell is "not measured".

    Scores are ×100 values, finite and non-negative (IntentionGym's may exceed 100). ``ValueError``
    naming the line for: a missing column, a row
    with fewer or more fields than the header, a score that is not a finite number in range, an
    empty user or agent, a repeated (user, judge, agent) row, and a file with no rows. A UTF-8
    byte-order mark is accepted.
    """
    columns = ENV_TABLE.column_names()
    with path.open(newline="", encoding="utf-8-sig") as handle:
        reader = csv.DictReader(handle)
        missing = {"user", "agent", *columns} - set(reader.fieldnames or ())
        if missing:
            raise ValueError(f"{path}: missing columns {sorted(missing)}")
        rows = []
        seen: set[tuple[str, str, str]] = set()
        for number, raw in enumerate(reader, start=2):
            if None in raw or any(value is None for value in raw.values()):
                raise ValueError(f"{path}:{number}: the row has a different number of fields than the header")
            scores: dict[str, float | None] = {}
            for column in columns:
                cell = (raw.get(column) or "").strip()
                try:
                    value = float(cell) if cell else None
                except ValueError:
                    raise ValueError(f"{path}:{number}: {column}={cell!r} is not a number") from None
                if value is not None and not (math.isfinite(value) and value >= 0.0):
                    raise ValueError(f"{path}:{number}: {column}={cell!r} is not a finite, non-negative score")
                scores[column] = value
            row = {
                "user": raw["user"].strip(),
                "judge": (raw.get("judge") or "self").strip() or "self",
                "agent": raw["agent"].strip(),
                "label": (raw.get("label") or raw["agent"]).strip(),
                "scores": scores,
            }
            if not row["user"] or not row["agent"]:
                raise ValueError(f"{path}:{number}: user and agent must not be empty")
            identity = (row["user"], row["judge"], row["agent"])
            if identity in seen:
                raise ValueError(f"{path}:{number}: a second row for user {row['user']!r}, agent {row['agent']!r}")
            seen.add(identity)
            rows.append(row)
    if not rows:
        raise ValueError(f"{path}: no score rows (only a header)")
    return rows


def build_sections(rows: Sequence[Mapping[str, Any]], weights: Mapping[str, float]) -> list[Section]:
    """Group rows by (user, judge) in file order and compute each row's Avg and MR."""
    grouped: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault((row["user"], row["judge"]), []).append(row)
    sections = []
    for (user, judge), members in grouped.items():
        ranks = mean_ranks({row["agent"]: row["scores"] for row in members})
        summary_rows = []
        for row in members:
            avg, avg_partial = weighted_avg(row["scores"], weights)
            mr, mr_partial = ranks[row["agent"]]
            summary_rows.append(
                SummaryRow(
                    agent=row["agent"],
                    label=row["label"],
                    scores=dict(row["scores"]),
                    avg=avg,
                    avg_partial=avg_partial,
                    mr=mr,
                    mr_partial=mr_partial,
                )
            )
        sections.append(Section(user=user, judge=judge, rows=summary_rows))
    return sections


def mean_over_users(sections: Sequence[Section]) -> dict[str, dict[str, Any]]:
    """Per agent: plain means over the sections of its Avg, of each env column and of its MR."""
    collected: dict[str, dict[str, list[float]]] = {}
    for section in sections:
        for row in section.rows:
            bucket = collected.setdefault(row.agent, {})
            for column, value in row.scores.items():
                if value is not None:
                    bucket.setdefault(column, []).append(value)
            for key, value in (("avg", row.avg), ("mr", row.mr)):
                if value is not None:
                    bucket.setdefault(key, []).append(value)
    return {
        agent: {key: sum(values) / len(values) for key, values in bucket.items()} for agent, bucket in collected.items()
    }


def _in_order(rows: Sequence[SummaryRow], order: Sequence[str]) -> list[SummaryRow]:
    """``rows`` in ``order`` of their agents; agents missing from it follow in their own order."""
    return sorted(rows, key=lambda row: order.index(row.agent) if row.agent in order else len(order))


def _title(column: str) -> str:
    entry = ENV_TABLE.get(column)
    return ENV_TABLE.title(column) + ("*" if entry is not None and entry.held_out else "")


def _markdown_table(
    rows: Sequence[SummaryRow], order: Sequence[str], columns: Sequence[str], *, ranked: bool = True
) -> list[str]:
    """One section's table: an agent per row, the env ``columns``, then Avg and MR when ``ranked``."""
    shown = (*columns, *RANKED) if ranked else tuple(columns)
    header = ["Agent", *[_title(c) for c in columns], *(["Avg", "MR"] if ranked else [])]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    best: dict[str, float] = {}
    for column in shown:
        values = [_cell_value(row, column) for row in rows]
        present = [v for v in values if v is not None]
        if present:
            best[column] = min(present) if column == "mr" else max(present)
    for row in _in_order(rows, order):
        cells = [row.label]
        for column in shown:
            value = _cell_value(row, column)
            text = display(value)
            if column == "mr" and value is not None:
                text = f"{value:.2f}"
            if value is not None and column in best and float(display(value)) == float(display(best[column])):
                text = f"**{text}**"
            if (column == "avg" and row.avg_partial) or (column == "mr" and row.mr_partial):
                text += "‡"
            if row.cells.get(column, {}).get("user_failure_rate", 0.0) >= DAGGER_RATE:
                text += "†"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def delta_table(sections: Sequence[Section]) -> dict[str, Any]:
    """The paper's Avg-per-user table with Δ_sim and Δ_CSD, when the released agents they compare are present.

    ``{"agents": [...], "deltas": [...], "by_user": {user: {alias or delta: value}}, "mean": {...}}``: the
    released agents found (by alias or label, ``RELEASED_AGENTS`` order), each user's Avg (×100) of each and
    its deltas, and ``mean`` (more than one user): the plain mean of each agent's Avg and of each delta over
    the users that have one (a delta stays paired within a user). ``{}`` when no delta's two agents are both
    present.
    """
    by_user: dict[str, dict[str, float | None]] = {}
    for section in sections:
        avgs = {alias: row.avg for row in section.rows if (alias := released_alias(row.agent, row.label)) is not None}
        by_user[_heading(section)] = avgs
    found = {alias for avgs in by_user.values() for alias in avgs}
    agents = [alias for alias in RELEASED_AGENTS if alias in found]
    deltas = list(paper_deltas(dict.fromkeys(agents, 0.0)))
    if not deltas:
        return {}
    table: dict[str, Any] = {"agents": agents, "deltas": deltas, "by_user": {}}
    for user, avgs in by_user.items():
        table["by_user"][user] = {**{a: avgs.get(a) for a in agents}, **paper_deltas(dict.fromkeys(agents) | avgs)}
    if len(sections) > 1:
        mean: dict[str, float | None] = {}
        for key in (*agents, *deltas):
            values = [value for row in table["by_user"].values() if (value := row.get(key)) is not None]
            mean[key] = sum(values) / len(values) if values else None
        table["mean"] = mean
    return table


def _delta_markdown(table: Mapping[str, Any], users: int) -> list[str]:
    if not table:
        return []
    agents, deltas = table["agents"], table["deltas"]
    header = ["User", *(RELEASED_AGENTS[a][1] for a in agents), *deltas]
    lines = ["## Avg per user, with the paper's deltas", "", "| " + " | ".join(header) + " |"]
    lines.append("|" + "---|" * len(header))
    rows = [*table["by_user"].items(), *([(f"Mean over {users} users", table["mean"])] if "mean" in table else [])]
    for user, values in rows:
        cells = [display(values.get(a)) for a in agents]
        cells += ["—" if values.get(d) is None else f"{values[d]:+.2f}" for d in deltas]
        lines.append("| " + " | ".join([user, *cells]) + " |")
    explained = {"Δ_sim": "Δ_sim = UserRL+ − UserRL", "Δ_CSD": "Δ_CSD = CSD − UserRL+"}
    return [*lines, "", "; ".join(explained[d] for d in deltas) + " (Avg ×100).", ""]


def _extra_columns(extra: Sequence[Section]) -> list[str]:
    """The envs of the other-envs table, in the env table's order, then first seen."""
    seen = list(dict.fromkeys(column for section in extra for row in section.rows for column in row.scores))
    listed = [entry.short for entry in ENV_TABLE if entry.short in seen]
    return [*listed, *(column for column in seen if column not in listed)]


def _score_csv_rows(sections: Sequence[Section], columns: Sequence[str]) -> Iterator[dict[str, Any]]:
    for section in sections:
        for row in section.rows:
            for column in columns:
                value = _cell_value(row, column)
                yield {
                    "user": section.user,
                    "judge": section.judge,
                    "agent": row.agent,
                    "column": column,
                    "value": "" if value is None else repr(value),
                }


def _cell_value(row: SummaryRow, column: str) -> float | None:
    if column == "avg":
        return row.avg
    if column == "mr":
        return row.mr
    return row.scores.get(column)


def write_summary(
    out_dir: Path,
    sections: Sequence[Section],
    *,
    mode: str,
    weights: Mapping[str, float],
    abcd: Sequence[AbcdSummary] = (),
    extra: Sequence[Section] = (),
    robustness: RobustnessTable | None = None,
    pass_k: PassKTable | None = None,
) -> None:
    """Write ``summary.json``, ``summary.csv`` and ``summary.md`` into ``out_dir``.

    ``sections`` hold the paper's columns (with Avg and MR). ``extra`` holds the conversation envs
    outside them, scored the same way but apart from Avg and MR: key ``extra``, CSV rows with the
    env's short name as ``column``, and a markdown table of other envs. ``abcd`` (the ABCD table)
    adds its own key, CSV rows with column ``abcd`` and a markdown section before the failure table.
    ``robustness`` (a run of more than control) and ``pass_k`` (tasks with several trials) add keys
    ``robustness`` and ``pass_k`` (``{}`` without them), markdown sections after the paper's table and,
    for robustness, ``plots/robustness.png``. All other tables are the control condition's.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    columns = ENV_TABLE.column_names()
    extra_columns = _extra_columns(extra)
    means = mean_over_users(sections)
    deltas = delta_table(sections)
    # rows ordered by the agent's mean Avg over users, worst first
    order = sorted(means, key=lambda agent: (means[agent].get("avg", float("-inf")), agent))
    summary = {
        "mode": mode,
        "weights": dict(weights),
        "agents": order,
        "sections": [section.model_dump() for section in sections],
        "mean_over_users": means,
        "paper_deltas": deltas,
        "abcd": [summary.model_dump() for summary in abcd],
        "extra": [section.model_dump() for section in extra],
        "robustness": robustness.model_dump() if robustness is not None else {},
        "pass_k": pass_k.model_dump() if pass_k is not None else {},
    }
    write_text_atomic(out_dir / "summary.json", json.dumps(summary, indent=2, sort_keys=True) + "\n")
    with io.StringIO(newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(_score_csv_rows(sections, (*columns, *RANKED)))
        writer.writerows(_score_csv_rows(extra, extra_columns))
        for summary_row in abcd:
            writer.writerow(
                {
                    "user": summary_row.user,
                    "judge": "self",
                    "agent": summary_row.agent,
                    "column": "abcd",
                    "value": repr(summary_row.score),
                    "n_episodes": summary_row.n_episodes,
                }
            )
        write_text_atomic(out_dir / "summary.csv", handle.getvalue())
    lines: list[str] = []
    if robustness is not None:
        others = ", ".join(c for c in robustness.conditions if c != CONTROL)
        lines += [f"These tables are the control condition's; {others}: see *Robustness*.", ""]
    for section in sections:
        lines += [f"## {_heading(section)}", "", *_markdown_table(section.rows, order, columns), ""]
    if len(sections) > 1:
        mean_rows = [
            SummaryRow(
                agent=agent,
                label=agent,
                scores={c: means[agent].get(c) for c in columns},
                avg=means[agent].get("avg"),
                mr=means[agent].get("mr"),
            )
            for agent in order
        ]
        lines += [f"## Mean over {len(sections)} users", "", *_markdown_table(mean_rows, order, columns), ""]
    lines += _delta_markdown(deltas, len(sections))
    if any(row.avg_partial or row.mr_partial for section in sections for row in section.rows):
        lines.append("‡ averaged over the columns that have a value (— = not measured).")
    for part in (robustness_markdown(robustness), pass_k_markdown(pass_k)):
        lines += [""] if part and lines and lines[-1] else []
        lines += part
    if extra:
        lines += [""] if lines and lines[-1] else []
        lines += ["## Other envs (not in Avg or MR)", ""]
        for section in extra:
            table = _markdown_table(section.rows, order, extra_columns, ranked=False)
            lines += [f"### {_heading(section)}", "", *table, ""]
    lines += abcd_markdown(abcd)
    failures = [
        (section.user, row.label, column, cell)
        for section in (*sections, *extra)
        for row in section.rows
        for column, cell in row.cells.items()
        if cell.get("n_user_failure_episodes")
    ]
    if failures:
        lines += [
            "",
            "† user-failure episode rate ≥ 5% in these cells:",
            "",
            "| User | Agent | Env | Episodes | User-failure rate | By role:kind |",
            "|---|---|---|---|---|---|",
        ]
        for user, agent, column, cell in failures:
            kinds = ", ".join(f"{kind}: {n} episodes" for kind, n in sorted(cell["failures_by_kind"].items()))
            lines.append(
                f"| {user} | {agent} | {column} | {cell['n_episodes']} | "
                f"{100 * cell['user_failure_rate']:.1f}% | {kinds} |"
            )
        lines.append("")
    lines.append(
        "Columns marked * were held out from training. Avg weights: "
        + ", ".join(f"{c} {weights[c]:g}" for c in columns if c in weights)
        + "."
    )
    write_text_atomic(out_dir / "summary.md", "\n".join(lines) + "\n")
    write_plots(out_dir, sections)
    if robustness is not None:
        write_robustness_plot(out_dir, robustness)


def _heading(section: Section) -> str:
    judge = "" if section.judge == "self" else f" (judge: {section.judge})"
    return f"{section.user}{judge}"


def report_from_scores(path: Path, out_dir: Path, weights: Mapping[str, float] | None = None) -> list[Section]:
    """Recompute Avg and MR from a scores table and write the summary files and ``report.html``
    (tables and plots, no episodes); returns the sections."""
    chosen = dict(weights or ENV_TABLE.avg_weights())
    sections = build_sections(read_scores_csv(path), chosen)
    write_summary(out_dir, sections, mode="from_scores", weights=chosen)
    write_html_report(out_dir, [])
    return sections
