"""The data of a summary: sections (one per user and judge) of rows (one per agent).

Shared by the tables (:mod:`~mimesis_gym.evaluation.report`), the plots
(:mod:`~mimesis_gym.evaluation.plots`) and the runner's scoring, so none of them imports another
for its types.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

__all__ = ["Section", "SummaryRow"]


class SummaryRow(BaseModel):
    """One agent's scores (×100) in one section; ``avg``/``mr`` stay ``None`` outside the paper's table."""

    agent: str
    label: str
    scores: dict[str, float | None]
    score_exclude: dict[str, float | None] | None = None
    score_include: dict[str, float | None] | None = None
    avg: float | None = None
    avg_partial: bool = False
    mr: float | None = None
    mr_partial: bool = False
    cells: dict[str, dict[str, Any]] = {}
    """Per env: ``n_episodes``, ``n_user_failure_episodes``, ``user_failure_rate``, ``failures_by_kind``, …"""


class Section(BaseModel):
    """The rows of one (user, judge) pair."""

    user: str
    judge: str
    rows: list[SummaryRow]
