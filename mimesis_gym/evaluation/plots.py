"""Plots of a summary, with matplotlib's Agg backend at 150 dpi (extra ``plots``).

``scores__<user>.png``: grouped bars per env and agent, the envs marked ``wide_scale`` in the env
table (Intention, reaching ~270) in their own panel; ``avg_by_user.png``: Avg per user and agent;
``heatmap__<agent>.png``: users × envs + Avg, colour normalised per column, raw values annotated,
unmeasured cells hatched grey; ``user_failures.png`` (runs only): users × envs, the highest
user-failure episode rate of the cell; ``robustness.png`` (runs of more than control): per user, Δ vs
control of each condition grouped per agent, each bar labelled with its enacted share. Without
matplotlib the plots are skipped with one WARNING.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.robustness import RobustnessTable
from mimesis_gym.evaluation.sections import Section

__all__ = ["write_plots", "write_robustness_plot"]

logger = logging.getLogger(__name__)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "x"


def _pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend, or ``None`` (with one WARNING) without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logger.warning("matplotlib is not installed: plots skipped (pip install 'mimesis-gym[plots]')")
        return None
    return plt


def write_plots(out_dir: Path, sections: Sequence[Section]) -> list[Path]:
    """Write the plots that need no episodes; the list of files written (empty without matplotlib or rows)."""
    if not any(section.rows for section in sections):
        return []
    plt = _pyplot()
    if plt is None:
        return []
    plots = out_dir / "plots"
    plots.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    agents = list(dict.fromkeys(row.agent for section in sections for row in section.rows))
    columns = [
        c for c in ENV_TABLE.column_names() if any(row.scores.get(c) is not None for s in sections for row in s.rows)
    ]

    for section in sections:
        figure, (main, side) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [5, 1]})
        wide = {entry.short for entry in ENV_TABLE if entry.wide_scale}
        for axis, panel in ((main, [c for c in columns if c not in wide]), (side, [c for c in columns if c in wide])):
            width = 0.8 / max(1, len(section.rows))
            for index, row in enumerate(section.rows):
                values = [row.scores.get(c) or 0.0 for c in panel]
                axis.bar([i + index * width for i in range(len(panel))], values, width, label=row.label)
            axis.set_xticks([i + 0.4 - width / 2 for i in range(len(panel))])
            axis.set_xticklabels([ENV_TABLE.title(c) for c in panel], rotation=30)
        main.set_ylabel("score ×100")
        main.legend(fontsize=8)
        figure.suptitle(f"Scores with user {section.user}")
        figure.tight_layout()
        path = plots / f"scores__{_slug(section.user)}.png"
        figure.savefig(path, dpi=150)
        plt.close(figure)
        written.append(path)

    figure, axis = plt.subplots(figsize=(8, 4))
    width = 0.8 / max(1, len(agents))
    for index, agent in enumerate(agents):
        values = [next((r.avg or 0.0 for r in s.rows if r.agent == agent), 0.0) for s in sections]
        axis.bar([i + index * width for i in range(len(sections))], values, width, label=agent)
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(sections))])
    axis.set_xticklabels([s.user for s in sections], rotation=30)
    axis.set_ylabel("Avg ×100")
    axis.legend(fontsize=8)
    figure.tight_layout()
    path = plots / "avg_by_user.png"
    figure.savefig(path, dpi=150)
    plt.close(figure)
    written.append(path)

    heat_columns = [*columns, "avg"]
    for agent in agents:
        rows = [next((r for r in s.rows if r.agent == agent), None) for s in sections]
        grid = [[(r.avg if c == "avg" else r.scores.get(c)) if r else None for c in heat_columns] for r in rows]
        figure, axis = plt.subplots(figsize=(1.1 * len(heat_columns) + 2, 0.6 * len(sections) + 1.5))
        for j, _ in enumerate(heat_columns):
            present = [g[j] for g in grid if g[j] is not None]
            top = max(present) if present else 1.0
            for i, row in enumerate(grid):
                value = row[j]
                if value is None:
                    axis.add_patch(plt.Rectangle((j, i), 1, 1, facecolor="lightgrey", hatch="//"))
                    continue
                shade = value / top if top else 0.0
                axis.add_patch(plt.Rectangle((j, i), 1, 1, facecolor=plt.cm.viridis(shade)))
                ink = "black" if shade > 0.6 else "white"
                axis.text(j + 0.5, i + 0.5, f"{value:.1f}", ha="center", va="center", fontsize=7, color=ink)
        axis.set_xlim(0, len(heat_columns))
        axis.set_ylim(0, len(sections))
        axis.set_xticks([j + 0.5 for j in range(len(heat_columns))])
        axis.set_xticklabels(["Avg" if c == "avg" else ENV_TABLE.title(c) for c in heat_columns], rotation=30)
        axis.set_yticks([i + 0.5 for i in range(len(sections))])
        axis.set_yticklabels([s.user for s in sections])
        axis.set_title(agent)
        figure.tight_layout()
        path = plots / f"heatmap__{_slug(agent)}.png"
        figure.savefig(path, dpi=150)
        plt.close(figure)
        written.append(path)
    if any(row.cells for section in sections for row in section.rows):
        rates = [
            [max((row.cells.get(c, {}).get("user_failure_rate", 0.0) for row in s.rows), default=0.0) for c in columns]
            for s in sections
        ]
        figure, axis = plt.subplots(figsize=(1.1 * len(columns) + 2, 0.6 * len(sections) + 1.5))
        image = axis.imshow(rates, cmap="Reds", vmin=0.0, vmax=1.0, aspect="auto")
        for i, line in enumerate(rates):
            for j, value in enumerate(line):
                axis.text(j, i, f"{100 * value:.0f}%", ha="center", va="center", fontsize=7)
        axis.set_xticks(range(len(columns)))
        axis.set_xticklabels([ENV_TABLE.title(c) for c in columns], rotation=30)
        axis.set_yticks(range(len(sections)))
        axis.set_yticklabels([s.user for s in sections])
        axis.set_title("User-failure episode rate")
        figure.colorbar(image, ax=axis)
        figure.tight_layout()
        path = plots / "user_failures.png"
        figure.savefig(path, dpi=150)
        plt.close(figure)
        written.append(path)
    return written


def write_robustness_plot(out_dir: Path, table: RobustnessTable) -> Path | None:
    """``plots/robustness.png``: one panel per user, Δ vs control (×100) of each condition other than
    control, bars grouped per agent, each labelled with its enacted share; ``None`` without matplotlib
    or without a Δ to draw."""
    rows = [row for row in table.rows if row.condition != CONTROL and row.delta is not None]
    if not rows:
        return None
    plt = _pyplot()
    if plt is None:
        return None
    users = list(dict.fromkeys(row.user for row in rows))
    conditions = list(dict.fromkeys(row.condition for row in rows))
    figure, axes = plt.subplots(len(users), 1, figsize=(8, 3.5 * len(users)), squeeze=False)
    width = 0.8 / len(conditions)
    for axis, user in zip(axes[:, 0], users, strict=True):
        mine = [row for row in rows if row.user == user]
        agents = list(dict.fromkeys(row.agent for row in mine))
        for index, condition in enumerate(conditions):
            found = {row.agent: row for row in mine if row.condition == condition}
            xs = [a + index * width for a, agent in enumerate(agents) if agent in found]
            picked = [found[agent] for agent in agents if agent in found]
            bars = axis.bar(xs, [row.delta for row in picked], width, label=condition)
            shares = [f"{100 * (row.enacted_share or 0.0):.0f}%" for row in picked]
            axis.bar_label(bars, labels=shares, fontsize=7, padding=2)
        axis.axhline(0.0, color="black", linewidth=0.8)
        low, high = min(0.0, *(row.delta or 0.0 for row in mine)), max(0.0, *(row.delta or 0.0 for row in mine))
        margin = 0.15 * max(high - low, 1.0)  # room for the share labels above and below the bars
        axis.set_ylim(low - margin, high + margin)
        axis.set_xticks([a + 0.4 - width / 2 for a in range(len(agents))])
        axis.set_xticklabels(agents, rotation=15)
        axis.set_ylabel("Δ vs control ×100")
        axis.set_title(f"Robustness with user {user} (bar labels: enacted share)")
        axis.legend(fontsize=8)
    figure.tight_layout()
    path = out_dir / "plots" / "robustness.png"
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=150)
    plt.close(figure)
    return path
