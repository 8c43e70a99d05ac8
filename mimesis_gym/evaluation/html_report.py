"""``report.html``: one self-contained page to look at a run (docs/evaluation.md, "The report page").

The page holds the tables of ``summary.md`` (converted by
:mod:`~mimesis_gym.evaluation.summary_markup`, so the numbers are the ones ``eval`` printed), the
plots of ``plots/`` as ``data:`` URIs, and an episode browser. It loads nothing: the CSS and the
script are inline, and a Content-Security-Policy allows only them (by hash) and ``data:`` images,
so the page works from ``file://``, over an SSH tunnel (``mimesis-gym view``) and offline.

Episodes travel as two JSON documents in ``<script type="application/json">`` elements, each ``<``
written as ``\\u003c`` so that no record text can close the element:

* ``episode-index``: ``{"fields": [...], "rows": [[...], ...]}``, one short row per episode
  (:data:`INDEX_FIELDS`), parsed at load; the list renders only the rows in view.
* ``episode-details``: the records themselves, in the same order, parsed the first time an
  episode is opened.

Records are the last record of each key, as the summary scores them. Their strings pass through
:func:`~mimesis_gym.evaluation.store.safe_strings` (encodable, configured key values removed); the
page adds nothing from the environment. The script renders every record string as text
(``textContent``), never as markup. Privileged data (the user's thoughts, the task's hidden data)
is in the file when the run stored it (``eval --privileged``) and shown only after the reader
ticks "show privileged".
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import html
import json
import math
from collections import Counter
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

from mimesis_gym.core.text import clean_text
from mimesis_gym.evaluation.records import EpisodeRecord
from mimesis_gym.evaluation.rundir import write_text_atomic
from mimesis_gym.evaluation.store import safe_strings, serialise_record
from mimesis_gym.evaluation.summary_markup import summary_to_html

__all__ = ["INDEX_FIELDS", "REPORT_NAME", "build_html_report", "episode_index", "script_json", "write_html_report"]

REPORT_NAME = "report.html"
INDEX_FIELDS = (
    "env", "task_id", "agent", "user", "trial", "seed", "status", "episode_score", "n_turns", "duration_s",
    "n_user_failures", "error", "user_behavior",
)  # fmt: skip
"""The columns of one row of ``episode-index``."""
ERROR_CHARS = 200
"""How much of a record's ``error`` the index row keeps (the episode view shows all of it)."""
PLOT_ORDER = ("scores__", "avg_by_user", "robustness", "heatmap__", "user_failures")


def script_json(text: str) -> str:
    """JSON text made safe inside a ``<script>`` element: every ``<`` becomes the JSON escape ``\\u003c``.

    That rules out ``</script>`` and ``<!--`` in the element whatever the records hold; ``JSON.parse``
    reads the escape back as ``<``.
    """
    return text.replace("<", "\\u003c")


def episode_index(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """``{"fields": INDEX_FIELDS, "rows": [...]}``: one row per record, in order."""
    rows = [
        [
            record.env, record.task_id, record.agent, record.user, record.trial, record.seed, record.status,
            record.episode_score, record.n_turns, round(record.duration_s, 3), len(record.user_failures),
            (record.error or "")[:ERROR_CHARS], record.user_behavior,
        ]
        for record in records
    ]  # fmt: skip
    return {"fields": list(INDEX_FIELDS), "rows": _finite(safe_strings(rows))}


def _finite(value: Any) -> Any:
    """``value`` with every NaN or infinite float replaced by ``None`` (``JSON.parse`` rejects them)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_finite(item) for item in value]
    return value


def _record_json(record: EpisodeRecord) -> str:
    """The record as the results store writes it, with non-finite numbers as ``null``."""
    text = serialise_record(record)
    if "NaN" in text or "Infinity" in text:  # also matches text inside strings: then the round trip is a no-op
        text = json.dumps(_finite(json.loads(text)), ensure_ascii=False, sort_keys=True, allow_nan=False)
    return text


def _asset(name: str) -> str:
    return resources.files("mimesis_gym.evaluation").joinpath("report_assets", name).read_text(encoding="utf-8")


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def _plot_rank(path: Path) -> tuple[int, str]:
    rank = next((i for i, prefix in enumerate(PLOT_ORDER) if path.name.startswith(prefix)), len(PLOT_ORDER))
    return rank, path.name


def _plots_html(plots: Sequence[tuple[str, bytes]]) -> str:
    if not plots:
        return "<p class=\"note\">No plots (they need matplotlib: <code>pip install 'mimesis-gym[plots]'</code>).</p>"
    figures = []
    for name, data in plots:
        uri = "data:image/png;base64," + base64.b64encode(data).decode("ascii")
        label = html.escape(name)
        figures.append(f'<figure><img src="{uri}" alt="plot {label}"><figcaption>{label}</figcaption></figure>')
    return '<div class="plots">' + "".join(figures) + "</div>"


def _meta_line(records: Sequence[EpisodeRecord], generated: str) -> str:
    statuses = Counter(record.status for record in records)
    counts = ", ".join(f"{status} {n}" for status, n in sorted(statuses.items()))
    runs = len({record.run_id for record in records})
    text = f"{len(records)} episodes" + (f" ({counts})" if counts else "")
    text += f" from {runs} run{'s' if runs != 1 else ''}" if runs else ""
    return html.escape(f"{text} · written {generated}")


def build_html_report(
    title: str,
    summary_markdown: str | None,
    plots: Sequence[tuple[str, bytes]],
    records: Sequence[EpisodeRecord],
    *,
    generated: str | None = None,
) -> str:
    """The page's HTML: ``summary_markdown`` as tables, ``plots`` as ``(name, png bytes)``, ``records`` browsable."""
    style, script = _asset("report.css"), _asset("report.js")
    csp = (
        f"default-src 'none'; script-src {_csp_hash(script)}; style-src {_csp_hash(style)}; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )
    summary = (
        summary_to_html(summary_markdown)
        if summary_markdown is not None
        else '<p class="note">No summary.md in this directory.</p>'
    )
    details = "[" + ",".join(_record_json(record) for record in records) + "]"
    generated = generated or dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return Template(_asset("report.html")).substitute(
        csp=csp,  # base64 digests and fixed words: nothing to escape in a double-quoted attribute
        title=html.escape(title),
        meta=_meta_line(records, generated),
        summary=summary,
        plots=_plots_html(plots),
        index=script_json(json.dumps(episode_index(records), ensure_ascii=False, allow_nan=False)),
        details=script_json(details),
        style=style,
        script=script,
    )


def write_html_report(out_dir: Path, records: Sequence[EpisodeRecord]) -> Path:
    """Write ``out_dir/report.html`` from ``out_dir``'s ``summary.md`` and ``plots/`` and ``records``; its path."""
    summary_path = out_dir / "summary.md"
    summary = summary_path.read_text(encoding="utf-8") if summary_path.is_file() else None
    plot_dir = out_dir / "plots"
    plot_files = sorted(plot_dir.glob("*.png"), key=_plot_rank) if plot_dir.is_dir() else []
    page = build_html_report(
        clean_text(f"mimesis-gym report: {out_dir.resolve().name}"),  # a file name may hold undecodable bytes
        summary,
        [(path.name, path.read_bytes()) for path in plot_files],
        records,
    )
    path = out_dir / REPORT_NAME
    write_text_atomic(path, page)
    return path
