"""The scorecard's files: ``users_report.json``, ``users_report.md``, one plot per behaviour dimension
and ``report.html`` (the tables, the plots and the replayed episodes)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mimesis_gym.evaluation.humanlike import behaviour
from mimesis_gym.evaluation.records import EpisodeRecord
from mimesis_gym.evaluation.rundir import write_text_atomic

__all__ = ["CEILING", "FLOOR", "REFERENCE", "markdown", "write_scorecard"]

CEILING = "human (test half)"
"""The ceiling row: the humans of the replayed ``test`` conversations, scored as a user is."""
REFERENCE = "human (dev half)"
"""The reference every row is compared with: the humans of the ``dev`` half."""
FLOOR = "scripted"
"""The floor row: the replay env's template user."""

OVERALL_COLUMNS = (
    ("index", lambda e: e["index"]),
    ("behaviour", lambda e: e["families"]["behaviour"]),
    ("lexical", lambda e: e["families"]["lexical"]),
    ("UserLM", lambda e: e["families"]["userlm"]),
    ("role & length", lambda e: e["families"]["role_length"]),
    ("Turing", lambda e: e["families"]["turing"]),
)
SOURCE_COLUMNS = (
    ("index", lambda e: _score(e["index"])),
    *((dim, (lambda d: lambda e: _score(e["terms"][d]))(dim)) for dim in ("D1", "D2", "D3", "D4")),
    ("lexical", lambda e: _score(e["families"]["lexical"])),
    ("first turns", lambda e: _score(e["terms"]["first_turn_diversity"])),
    ("termination F1", lambda e: _ratio(e["parts"]["termination_f1"])),
    ("role faults", lambda e: _percent(e["parts"]["role_fault_rate"])),
    ("words/turn", lambda e: _number(e["parts"]["words_per_turn"])),
    ("length KS", lambda e: _ratio(e["parts"]["length_ks"])),
    ("Turing pick", lambda e: _percent(e["parts"]["turing_pick_rate"])),
    ("turns", lambda e: str(e["parts"]["turns"])),
    ("failed calls", lambda e: str(e["parts"]["failed_calls"])),
)


def _score(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _ratio(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.0f}%"


def _number(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f}"


def _label(user: str) -> str:
    if user == CEILING:
        return f"**ceiling**: {CEILING}"
    if user == FLOOR:
        return f"floor: {FLOOR} (template)"
    return user


def markdown(report: dict[str, Any]) -> str:
    """The overall table (index and its families per user), then one table per source."""
    rows = report["users"]
    lines = [
        "# How human is this user? Scorecard against real people",
        "",
        "Index and families in [0, 100]; higher is more like the humans of each corpus's dev half. "
        "The ceiling row is the humans of the test half.",
        "",
        "| user | " + " | ".join(name for name, _ in OVERALL_COLUMNS) + " | turns | failed calls |",
        "|---" * (len(OVERALL_COLUMNS) + 3) + "|",
    ]
    for user in rows:
        entry = report["overall"][user]
        cells = [_score(pick(entry)) for _, pick in OVERALL_COLUMNS]
        lines.append(f"| {_label(user)} | " + " | ".join(cells) + f" | {entry['turns']} | {entry['failed_calls']} |")
    lines += behaviour_rates_table(report)
    for source, table in report["sources"].items():
        lines += [
            "",
            f"## {source} (reference: {table['reference_conversations']} dev conversations)",
            "",
            "| user | " + " | ".join(name for name, _ in SOURCE_COLUMNS) + " |",
            "|---" * (len(SOURCE_COLUMNS) + 1) + "|",
        ]
        for user in rows:
            lines.append(f"| {_label(user)} | " + " | ".join(pick(table[user]) for _, pick in SOURCE_COLUMNS) + " |")
    lines += ["", f"Lexical tokenizer: {report['tokenizer']}. What each number means: docs/humans.md.", ""]
    return "\n".join(lines)


def behaviour_rates_table(report: dict[str, Any]) -> list[str]:
    """The markdown of the behaviour rates: per row, the share of conversations where each fact-free
    behaviour rule fires (all sources pooled); empty for a report without them."""
    rates = report.get("behaviour_rates")
    if not rates:
        return []
    behaviors = list(next(iter(rates.values())))
    lines = [
        "",
        "## Behaviour rates (not in the index)",
        "",
        "Share of conversations where a hard-user behaviour's rule fires in the user turns (docs/humans.md, "
        '"Behaviour rates").',
        "",
        "| user | " + " | ".join(behaviors) + " |",
        "|---" * (len(behaviors) + 1) + "|",
    ]
    for name, row in rates.items():
        label = f"reference: {REFERENCE}" if name == REFERENCE else _label(name)
        lines.append(f"| {label} | " + " | ".join(_percent(row[behavior]) for behavior in behaviors) + " |")
    return lines


def write_plots(report: dict[str, Any], plots: Path) -> list[tuple[str, bytes]]:
    """One bar chart per behaviour dimension: each feature for the dev humans, the ceiling and each
    user (all sources pooled). Empty without matplotlib (extra ``plots``)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    plots.mkdir(parents=True, exist_ok=True)
    rows = report["feature_rows"]
    names = [REFERENCE, *(user for user in report["users"] if user != REFERENCE)]
    written = []
    for dim, features in behaviour.DIMENSIONS.items():
        figure, axis = plt.subplots(figsize=(max(6.0, 1.3 * len(features)), 3.6))
        width = 0.8 / max(1, len(names))
        for offset, name in enumerate(names):
            row = rows.get(name)
            if row is None:
                continue
            values = [row.get(feature, 0.0) for feature in features]
            positions = [index + offset * width for index in range(len(features))]
            axis.bar(positions, values, width=width, label=name[:40])
        axis.set_xticks([index + 0.4 - width / 2 for index in range(len(features))])
        axis.set_xticklabels(features, rotation=20, ha="right", fontsize=8)
        axis.set_yscale("symlog", linthresh=1.0)
        axis.set_title(f"{dim}: humans (dev) vs each user, all sources")
        axis.legend(fontsize=7)
        figure.tight_layout()
        path = plots / f"humans_{dim}.png"
        figure.savefig(path, dpi=90)
        plt.close(figure)
        written.append((path.name, path.read_bytes()))
    return written


def write_scorecard(report: dict[str, Any], out: Path, records: Sequence[EpisodeRecord]) -> None:
    """``users_report.json`` and ``users_report.md`` (written whole, then renamed), the plots, and
    ``report.html`` with the tables, the plots and the replayed episodes."""
    from mimesis_gym.evaluation.html_report import REPORT_NAME, build_html_report

    out.mkdir(parents=True, exist_ok=True)
    write_text_atomic(out / "users_report.json", json.dumps(report, indent=2, sort_keys=True, allow_nan=False) + "\n")
    text = markdown(report)
    write_text_atomic(out / "users_report.md", text)
    plots = write_plots(report, out / "plots")
    page = build_html_report("mimesis-gym: how human is this user?", text, plots, records)
    write_text_atomic(out / REPORT_NAME, page)
