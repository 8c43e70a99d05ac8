"""Plots of a users report (extra ``plots``): disclosure curves and a metric bar chart, one colour per user
(per user and behaviour, with the behaviour's enacted share, when the report probed behaviours)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["BAR_METRICS", "ENACTED_BAR", "write_user_plots"]

BAR_METRICS: tuple[tuple[str, str, str | None], ...] = (
    ("unprompted disclosure", "unprompted_disclosure", None),
    ("answered directly", "answered_directly", None),
    ("role faults", "role_faults", "any"),
    ("hedging", "hedging", None),
    ("homogeneity", "homogeneity", None),
)
"""(label, report key, sub-key): the share-valued metrics drawn side by side per user."""
ENACTED_BAR = ("behaviour enacted", "behavior_enacted", None)
"""Drawn first when the report probed behaviours (a control column draws 0)."""


def write_user_plots(report: dict[str, Any], plots: Path) -> list[Path]:
    """``disclosure_curves.png`` and ``user_metrics.png`` under ``plots``; the files written.

    Raises ``ImportError`` when matplotlib is missing (the caller skips the plots)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots.mkdir(parents=True, exist_ok=True)
    users = report["users"]
    written = []

    figure, axis = plt.subplots(figsize=(6, 4))
    for user, metrics in users.items():
        curve = metrics["disclosure_curve"]
        points = [(t, value) for t, value in enumerate(curve, start=1) if value is not None]
        if points:
            axis.plot([t for t, _ in points], [100 * v for _, v in points], marker="o", label=user)
    axis.set_xlabel("user reply")
    axis.set_ylabel("hidden items disclosed (%)")
    axis.set_ylim(0, 100)
    if axis.get_legend_handles_labels()[0]:  # no curve when no user disclosed anything it could
        axis.legend(fontsize=8)
    figure.tight_layout()
    written.append(plots / "disclosure_curves.png")
    figure.savefig(written[-1], dpi=150)
    plt.close(figure)

    bars = (ENACTED_BAR, *BAR_METRICS) if report.get("user_behaviors") else BAR_METRICS
    figure, axis = plt.subplots(figsize=(8 + len(bars) - len(BAR_METRICS), 4))
    width = 0.8 / max(1, len(users))
    for index, (user, metrics) in enumerate(users.items()):
        values = []
        for _, key, sub in bars:
            value = metrics.get(key) if sub is None else metrics[key][sub]
            values.append(100 * value if value is not None else 0.0)
        axis.bar([i + index * width for i in range(len(bars))], values, width, label=user)
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(bars))])
    axis.set_xticklabels([label for label, _, _ in bars], rotation=20)
    axis.set_ylabel("% of replies / pairs")
    axis.legend(fontsize=8)
    figure.tight_layout()
    written.append(plots / "user_metrics.png")
    figure.savefig(written[-1], dpi=150)
    plt.close(figure)
    return written
