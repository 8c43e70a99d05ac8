"""The documentation-reference checker behind ``tests/test_doc_references.py``.

The scheme every file follows:

- Code, tests, benchmarks, examples and build files cite a page of the project's own docs as
  ``docs/<page>.md`` and, for one part of it, ``docs/<page>.md, "<Heading>"`` (several headings:
  ``docs/<page>.md, "<A>", "<B>"``), on one line. A heading is the exact text of a Markdown
  heading of that page, backticks removed. ``README.md, "<Heading>"`` cites the README.
- Markdown pages link to each other with relative links (``[Redaction](users.md#redaction)``);
  the anchor is the heading's slug as the docs site makes it. A page under ``docs/`` links only to
  pages under ``docs/`` (the site cannot serve anything else; name other files as code).
- Nothing cites a document the repository does not hold: no ``§`` section numbers, no design or
  style documents, no "the spec", no ``page.md 2.1`` section numbers.

:func:`find_problems` returns one ``path:line: message`` string per violation under a root.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator
from pathlib import Path

SCANNED_GLOBS = (
    "mimesis_gym/**/*.py",
    "docs/**/*.md",
    "README.md",
    "CHANGELOG.md",
    "examples/**/*.py",
    "benchmarks/**/*.py",
    "tests/**/*.py",
    "scripts/*",
    "pyproject.toml",
    "Makefile",
    ".ci/run",
)
"""What is scanned, relative to the root."""

SECTION_SIGN = "\u00a7"

OUTSIDE_DOCUMENTS = (
    (re.compile(r"\bDESIGN\b"), "cites the design document, which is not in the repository"),
    (re.compile(r"\bSTYLE\.md\b"), "cites a style document that is not in the repository"),
    (
        re.compile(r"\b(?:[Tt]he|its|per) spec\b|\bspec's\b|\bSpec:"),
        "cites a specification that is not in the repository",
    ),
    (re.compile(r"shared/spec\b"), "cites the specification outside the repository"),
    (re.compile(r"\b[\w/-]+\.md \d+(?:\.\d+)*\b"), "cites a numbered section; cite a heading instead"),
)

CITATION = re.compile(r'((?:\bdocs/[\w./-]+|\bREADME|\bCHANGELOG)\.md)((?:, "[^"\n]+")*)')
HEADING_IN_CITATION = re.compile(r'"([^"\n]+)"')
DANGLING_CITATION = re.compile(r"\bdocs/[\w./-]+\.md,\s*$")
MARKDOWN_LINK = re.compile(r"\[[^\]\n]*\]\(([^)\s]+)\)")
MARKDOWN_LINK_WHOLE = re.compile(r"\[[^\]\n]*\]\([^)\s]*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL_LINK = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def scanned_files(root: Path, skip: Iterable[str] = ()) -> list[Path]:
    """The scanned files under ``root``, minus the paths (or path prefixes) in ``skip``."""
    skipped = tuple(skip)
    found: set[Path] = set()
    for pattern in SCANNED_GLOBS:
        found.update(path for path in root.glob(pattern) if path.is_file())
    return sorted(p for p in found if not p.relative_to(root).as_posix().startswith(skipped))


def headings(page: Path) -> list[str]:
    """The heading texts of a Markdown page (outside fenced code), backticks removed."""
    found: list[str] = []
    in_fence = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            in_fence = not in_fence
            continue
        match = None if in_fence else HEADING.match(line)
        if match:
            found.append(match.group(2).replace("`", ""))
    return found


def slug(heading: str) -> str:
    """The anchor the docs site gives a heading (Python-Markdown's default ``toc`` slugify)."""
    text = unicodedata.normalize("NFKD", heading).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    yield from enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), start=1)


def _check_citation(root: Path, page: str, quoted: str) -> list[str]:
    target = root / page
    if not target.is_file():
        return [f"cites {page}, which does not exist"]
    known = headings(target)
    return [
        f'cites {page}, "{heading}": no such heading (headings: {", ".join(known)})'
        for heading in HEADING_IN_CITATION.findall(quoted)
        if heading not in known
    ]


def _check_link(root: Path, source: Path, target: str) -> list[str]:
    if EXTERNAL_LINK.match(target):
        return []
    path_part, _, anchor = target.partition("#")
    linked = (source.parent / path_part).resolve() if path_part else source.resolve()
    docs = (root / "docs").resolve()
    if source.resolve().is_relative_to(docs) and not linked.is_relative_to(docs):
        return [f"links to {target}, outside docs/ (the site cannot serve it; name the file as code)"]
    if not linked.exists():
        return [f"links to {target}, which does not exist"]
    if anchor and linked.suffix == ".md" and anchor not in {slug(h) for h in headings(linked)}:
        return [f"links to {target}: no heading with the anchor #{anchor}"]
    return []


def _page_names(root: Path) -> set[str]:
    """Every way of naming a docs page without ``docs/``: ``envs/tau.md``, ``tau.md``, …"""
    docs = root / "docs"
    names: set[str] = set()
    for page in docs.rglob("*.md") if docs.is_dir() else ():
        parts = page.relative_to(docs).parts
        names.update("/".join(parts[i:]) for i in range(len(parts)))
    return names


def find_problems(root: Path, skip: Iterable[str] = ()) -> list[str]:
    """Every reference under ``root`` that breaks the scheme, as ``path:line: message``."""
    names = sorted(_page_names(root), key=len, reverse=True)
    bare_page = re.compile(r"(?<![\w/.-])(" + "|".join(map(re.escape, names)) + r")\b") if names else None
    problems: list[str] = []
    for path in scanned_files(root, skip):
        relative = path.relative_to(root).as_posix()
        is_markdown = path.suffix == ".md"
        for number, line in _lines(path):
            found: list[str] = []
            if SECTION_SIGN in line:
                found.append(f"uses {SECTION_SIGN}: cite a docs heading instead")
            found += [message for pattern, message in OUTSIDE_DOCUMENTS if pattern.search(line)]
            for match in CITATION.finditer(line):
                found += _check_citation(root, match.group(1), match.group(2))
            if DANGLING_CITATION.search(line):
                found.append("a citation is split over two lines; keep it on one")
            if bare_page is not None:
                prose = MARKDOWN_LINK_WHOLE.sub("[]()", line) if is_markdown else line
                found += [
                    f"names {name} without docs/; write its path from the root" for name in bare_page.findall(prose)
                ]
            if is_markdown:
                for target in MARKDOWN_LINK.findall(line):
                    found += _check_link(root, path, target)
            problems += [f"{relative}:{number}: {message}" for message in found]
    return problems
