"""The ABCD table (docs/evaluation.md, "ABCD and TravelGym"): reported apart, never in Avg or MR.

For each (user, agent) pair — the agent being the *customer* policy under test — the headline is
the mean reward R over all rows (the release's ``all/score_v3``), then per condition (each of the 13
behaviors and ``control``) the mean R and the mean of every reward part of the episode's last step.
The condition of a row comes from the record's ``score_context["condition"]`` (the env reports it
there). Values are ×100 like the other tables.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from mimesis_gym.evaluation.records import EpisodeRecord

__all__ = ["ABCD_PARTS", "AbcdCondition", "AbcdSummary", "abcd_markdown", "abcd_summaries"]

ABCD_PARTS: tuple[str, ...] = ("exhibit", "placement", "naturalness", "on_task", "cooperative", "announced")
"""The reward parts shown per condition (docs/envs/abcd.md, "Rewards"); ``on_task`` is the consistency part."""


class AbcdCondition(BaseModel):
    """One condition's row: episodes, mean R and mean parts (×100; ``None`` where the part is absent)."""

    n_episodes: int
    reward: float
    parts: dict[str, float | None]


class AbcdSummary(BaseModel):
    """The ABCD result of one (user, agent) pair."""

    user: str
    agent: str
    n_episodes: int
    score: float
    """Mean R over all rows, ×100 (the headline)."""
    control: float | None
    """Mean R over the control rows, ×100."""
    behaviors: float | None
    """Mean R over the behavior rows, ×100."""
    conditions: dict[str, AbcdCondition]


def _mean(values: Sequence[float]) -> float | None:
    return 100.0 * sum(values) / len(values) if values else None


def _final_parts(record: EpisodeRecord) -> dict[str, Any]:
    for step in reversed(record.steps):
        if step.reward_parts:
            return dict(step.reward_parts)
    return {}


def abcd_summaries(records: Iterable[EpisodeRecord], labels: dict[str, str] | None = None) -> list[AbcdSummary]:
    """One :class:`AbcdSummary` per (user, agent) pair of ``records``, in first-seen order.

    ``records`` are the episodes of an env whose env-table entry says ``summary="abcd"`` (the
    runner routes them here). Every episode counts (a judge failure scores 0 by the env's own
    rule); ``labels`` maps user aliases to their display labels.
    """
    grouped: dict[tuple[str, str], list[EpisodeRecord]] = defaultdict(list)
    for record in records:
        grouped[(record.user, record.agent)].append(record)
    summaries = []
    for (user, agent), group in grouped.items():
        by_condition: dict[str, list[EpisodeRecord]] = defaultdict(list)
        for record in group:
            by_condition[str(record.score_context.get("condition", "unknown"))].append(record)
        conditions = {}
        for condition in sorted(by_condition, key=lambda c: (c == "control", c)):
            rows = by_condition[condition]
            finals = [_final_parts(record) for record in rows]
            parts = {}
            for part in ABCD_PARTS:
                values = [float(p[part]) for p in finals if isinstance(p.get(part), (int, float))]
                parts[part] = _mean(values)
            conditions[condition] = AbcdCondition(
                n_episodes=len(rows), reward=_mean([r.episode_score for r in rows]) or 0.0, parts=parts
            )
        control = [r.episode_score for r in group if r.score_context.get("condition") == "control"]
        behaviors = [r.episode_score for r in group if r.score_context.get("condition") not in (None, "control")]
        summaries.append(
            AbcdSummary(
                user=(labels or {}).get(user, user),
                agent=agent,
                n_episodes=len(group),
                score=_mean([r.episode_score for r in group]) or 0.0,
                control=_mean(control),
                behaviors=_mean(behaviors),
                conditions=conditions,
            )
        )
    return summaries


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}"


def abcd_markdown(summaries: Sequence[AbcdSummary]) -> list[str]:
    """The ABCD section of ``summary.md``: a headline table, then one per-condition table per pair."""
    if not summaries:
        return []
    lines = [
        "## ABCD realistic behaviors (customer policy; not in Avg or MR)",
        "",
        "| User (support agent) | Customer policy | Rows | R (all) | R behaviors | R control |",
        "|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lines.append(
            f"| {s.user} | {s.agent} | {s.n_episodes} | {_cell(s.score)} | {_cell(s.behaviors)} | {_cell(s.control)} |"
        )
    for s in summaries:
        header = " | ".join(part for part in ABCD_PARTS)
        lines += [
            "",
            f"### {s.agent} with {s.user}",
            "",
            f"| Condition | Rows | R | {header} |",
            "|---|---|---|" + "---|" * len(ABCD_PARTS),
        ]
        for condition, row in s.conditions.items():
            parts = " | ".join(_cell(row.parts[part]) for part in ABCD_PARTS)
            lines.append(f"| {condition} | {row.n_episodes} | {_cell(row.reward)} | {parts} |")
    lines += ["", "on_task is the consistency part; announced is the share of rows halved for announcing.", ""]
    return lines
