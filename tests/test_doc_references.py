"""Every documentation reference resolves: citations of docs headings, links between pages, no outside specs.

The scheme is stated in ``tests/support/doc_references.py``; README.md's "Documentation" section
tells contributors. The checker itself is tested on a small tree with one violation of each kind.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.doc_references import find_problems, headings, slug

ROOT = Path(__file__).resolve().parents[1]

CHECKER = (
    # The checker and this test spell out the patterns they reject.
    "tests/support/doc_references.py",
    "tests/test_doc_references.py",
)


def test_every_reference_in_the_repository_resolves():
    problems = find_problems(ROOT, skip=CHECKER)
    assert not problems, "\n".join(problems)


def test_the_skipped_checker_files_exist():
    for path in CHECKER:
        assert (ROOT / path).is_file(), f"{path} does not exist: update CHECKER"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository with one docs page, one linked page and a clean module."""
    (tmp_path / "docs" / "envs").mkdir(parents=True)
    (tmp_path / "docs" / "users.md").write_text(
        "# Users\n\n```bash\n# not a heading\n```\n\n## When a user cannot be reached\n\n"
        "### Failure kinds and `info`\n\nSee [the env](envs/demo.md#rewards).\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "envs" / "demo.md").write_text("# Demo\n\n## Rewards\n", encoding="utf-8")
    (tmp_path / "mimesis_gym").mkdir()
    (tmp_path / "mimesis_gym" / "ok.py").write_text(
        '"""Fine (docs/users.md, "When a user cannot be reached", "Failure kinds and info"; docs/envs/demo.md)."""\n',
        encoding="utf-8",
    )
    return tmp_path


def test_a_clean_tree_has_no_problems(tree):
    assert find_problems(tree) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('"""Roles (users.md \u00a73.2)."""', "uses \u00a7"),
        ('"""The grammar (DESIGN 2.2)."""', "design document"),
        ('"""As the spec says."""', "specification"),
        ('"""Spec: envs/demo.md."""', "specification"),
        ('"""Scoring (evaluation.md 2.1)."""', "numbered section"),
        ('"""See docs/users.md, "Aliases"."""', "no such heading"),
        ('"""See docs/users.md, "not a heading"."""', "no such heading"),
        ('"""See docs/nothing.md."""', "does not exist"),
        ('"""See users.md."""', "without docs/"),
        ('"""See envs/demo.md."""', "without docs/"),
        ('# see docs/users.md,\n# "When a user cannot be reached"', "split over two lines"),
    ],
)
def test_each_kind_of_broken_reference_is_reported(tree, text, message):
    (tree / "mimesis_gym" / "bad.py").write_text(text + "\n", encoding="utf-8")
    problems = find_problems(tree)
    assert problems and all(p.startswith("mimesis_gym/bad.py:1:") for p in problems), problems
    assert any(message in p for p in problems), problems


@pytest.mark.parametrize(
    ("link", "message"),
    [
        ("[x](envs/missing.md)", "does not exist"),
        ("[x](envs/demo.md#termination)", "no heading with the anchor"),
        ("[x](#nowhere)", "no heading with the anchor"),
        ("[x](../mimesis_gym/ok.py)", "outside docs/"),
    ],
)
def test_broken_links_between_pages_are_reported(tree, link, message):
    page = tree / "docs" / "users.md"
    page.write_text(page.read_text(encoding="utf-8") + f"\n{link}\n", encoding="utf-8")
    problems = find_problems(tree)
    assert len(problems) == 1 and message in problems[0], problems


def test_skipped_paths_are_not_scanned(tree):
    (tree / "mimesis_gym" / "pending").mkdir()
    (tree / "mimesis_gym" / "pending" / "old.py").write_text('"""(DESIGN \u00a72)."""\n', encoding="utf-8")
    assert find_problems(tree)
    assert find_problems(tree, skip=["mimesis_gym/pending/"]) == []


def test_headings_skip_fenced_code_and_slugs_match_the_site():
    page = ROOT / "docs" / "users.md"
    assert "Failure kinds" in headings(page) and "... prints the base URL and: export" not in " ".join(headings(page))
    assert (
        slug("Pre-flight: every endpoint checked before episode 1")
        == "pre-flight-every-endpoint-checked-before-episode-1"
    )
    assert slug("CSD — Coached On-Policy Self-Distillation") == "csd-coached-on-policy-self-distillation"
    assert slug('Failure kinds and info["user_failure"]') == "failure-kinds-and-infouser_failure"
