"""``summary.md`` as HTML, so that the report page shows the very tables ``eval`` prints.

The summary writer (:mod:`~mimesis_gym.evaluation.report`) emits a small subset of Markdown:
``#`` headings, pipe tables (a header row, a ``|---|`` separator, body rows), paragraphs, ``**bold**``
(the best value of a column) and ``code``. :func:`summary_to_html` turns exactly that subset
into HTML; every piece of text is escaped first, so a label holding ``<`` or ``&`` stays text.
"""

from __future__ import annotations

import html
import re

__all__ = ["summary_to_html"]

HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*$")
SEPARATOR = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")
BOLD = re.compile(r"\*\*(.+?)\*\*")
CODE = re.compile(r"`([^`]+)`")
NUMBER = re.compile(r"^(<strong>)?[-+]?\d+(\.\d+)?(</strong>)?[‡†*%]*$")


def _inline(text: str) -> str:
    """Escaped text with ``**bold**`` and ``code`` spans."""
    return CODE.sub(r"<code>\1</code>", BOLD.sub(r"<strong>\1</strong>", html.escape(text, quote=False)))


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _table(lines: list[str]) -> str:
    """A pipe table; a row without the separator after it is a body row of a header-less table."""
    header: list[str] = []
    body = lines
    if len(lines) >= 2 and SEPARATOR.match(lines[1].strip()):
        header, body = _cells(lines[0]), lines[2:]
    parts = ['<div class="table-wrap"><table>']
    if header:
        parts.append("<thead><tr>" + "".join(f"<th>{_inline(cell)}</th>" for cell in header) + "</tr></thead>")
    parts.append("<tbody>")
    for line in body:
        cells = []
        for cell in _cells(line):
            rendered = _inline(cell)
            numeric = ' class="num"' if NUMBER.match(rendered) or cell == "—" else ""
            cells.append(f"<td{numeric}>{rendered}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</tbody></table></div>")
    return "".join(parts)


def summary_to_html(markdown: str, *, shift: int = 1) -> str:
    """The HTML of ``summary.md``'s subset of Markdown; heading levels are lowered by ``shift``."""
    lines = markdown.splitlines()
    blocks: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        if not line.strip():
            index += 1
            continue
        heading = HEADING.match(line)
        if heading:
            level = min(6, len(heading.group(1)) + shift)
            blocks.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
            index += 1
            continue
        if line.lstrip().startswith("|"):
            table: list[str] = []
            while index < len(lines) and lines[index].lstrip().startswith("|"):
                table.append(lines[index])
                index += 1
            blocks.append(_table(table))
            continue
        paragraph: list[str] = []
        while (
            index < len(lines)
            and lines[index].strip()
            and not HEADING.match(lines[index])
            and not lines[index].lstrip().startswith("|")
        ):
            paragraph.append(lines[index].strip())
            index += 1
        blocks.append(f"<p>{_inline(' '.join(paragraph))}</p>")
    return "\n".join(blocks)
