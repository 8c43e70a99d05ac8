"""The documentation site: every page in the nav, one API page per env class, the role rewrite, the build."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mimesis_gym.envs import ENV_TABLE

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MKDOCS = ROOT / "mkdocs.yml"
NAV_PAGE = re.compile(r"^\s*- (?:[^:\n]+: )?([\w./-]+\.md)\s*$")
API_PACKAGES = ("core", "corpora", "users", "agents", "evaluation", "algorithms", "integrations")


def nav_pages() -> list[str]:
    """The pages ``mkdocs.yml``'s nav lists, in order (paths relative to docs/)."""
    text = MKDOCS.read_text(encoding="utf-8")
    nav = text[text.index("\nnav:\n") :]
    return [match.group(1) for line in nav.splitlines() if (match := NAV_PAGE.match(line))]


def shipped_envs():
    return [entry for entry in ENV_TABLE if entry.entry_point.startswith("mimesis_gym.envs.")]


def test_the_nav_lists_every_page_once():
    pages = nav_pages()
    on_disk = sorted(page.relative_to(DOCS).as_posix() for page in DOCS.rglob("*.md"))
    assert len(pages) == len(set(pages)), "a page is in the nav twice"
    assert sorted(pages) == on_disk


def test_every_shipped_env_has_an_api_page_rendering_its_class():
    pages = set(nav_pages())
    for entry in shipped_envs():
        page = f"api/envs/{entry.short}.md"
        assert page in pages, f"{entry.id}: no API page {page} in the nav"
        module, cls = entry.entry_point.split(":")
        text = (DOCS / page).read_text(encoding="utf-8")
        assert re.search(rf"^::: {re.escape(module)}\.{cls}$", text, re.MULTILINE), f"{page} does not render {cls}"
        assert f"`{entry.id}`" in text
        if entry.kind == "conversation":
            assert f"envs/{entry.short}.md" in pages, f"{entry.id}: no guide docs/envs/{entry.short}.md in the nav"


def test_every_package_has_an_api_page_with_its_submodules():
    for name in API_PACKAGES:
        text = (DOCS / "api" / f"{name}.md").read_text(encoding="utf-8")
        assert f"::: mimesis_gym.{name}\n" in text and "show_submodules: true" in text, name


def test_make_docs_is_a_strict_build_that_ci_runs_before_the_tests():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs: .*\n\t.*mkdocs build --strict -d site$", makefile, re.MULTILINE)
    steps = [
        line for line in (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines() if line.startswith("make")
    ]
    assert "make docs" in steps and steps[-1] == "make test" and steps.index("make docs") < steps.index("make test")
    assert 'docs = ["mkdocs' in (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


# ------------------------------------------------------------------------ the role rewrite


@pytest.fixture(scope="module")
def docs_griffe():
    spec = importlib.util.spec_from_file_location("docs_griffe", ROOT / "scripts" / "docs_griffe.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


KNOWN = {
    "Database": "mimesis_gym.envs.tau.db.Database",
    "mimesis_gym.core.text.clean_text": "mimesis_gym.core.text.clean_text",
    "Collated.take": "mimesis_gym.algorithms.batching.Collated.take",
}


def test_a_resolved_role_becomes_an_optional_cross_reference(docs_griffe):
    text, broken = docs_griffe.convert("A :class:`Database` view.", KNOWN.get)
    assert (
        text
        == 'A <autoref identifier="mimesis_gym.envs.tau.db.Database" optional><code>Database</code></autoref> view.'
    )
    assert broken == []


def test_a_tilde_shows_the_last_name_only(docs_griffe):
    text, _ = docs_griffe.convert("See :func:`~mimesis_gym.core.text.clean_text`.", KNOWN.get)
    assert "<code>clean_text</code>" in text and 'identifier="mimesis_gym.core.text.clean_text"' in text
    text, _ = docs_griffe.convert(":meth:`Collated.take`", KNOWN.get)
    assert "<code>Collated.take</code>" in text


def test_an_unknown_name_of_the_package_is_a_broken_reference(docs_griffe):
    text, broken = docs_griffe.convert("Raises :class:`NoSuchError` or :func:`mimesis_gym.nowhere`.", KNOWN.get)
    assert text == "Raises `NoSuchError` or `mimesis_gym.nowhere`."
    assert broken == ["NoSuchError", "mimesis_gym.nowhere"]


def test_other_packages_are_code_and_not_broken(docs_griffe):
    text, broken = docs_griffe.convert("Built on :mod:`contextvars` and :class:`~gymnasium.Env`.", KNOWN.get)
    assert text == "Built on `contextvars` and `Env`." and broken == []


def test_text_without_roles_is_unchanged(docs_griffe):
    text = "Plain ``code``, a :not-a-role: and `backticks`."
    assert docs_griffe.convert(text, KNOWN.get) == (text, [])


# ------------------------------------------------------------------------ the build


def test_the_strict_build_succeeds_with_one_page_per_nav_entry(tmp_path):
    """Runs where the ``docs`` extra is installed (``make docs`` installs it)."""
    pytest.importorskip("mkdocstrings")
    out = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert out.returncode == 0, out.stdout + out.stderr
    built = {p.relative_to(tmp_path / "site").as_posix() for p in (tmp_path / "site").rglob("*.html")}
    assert {page.removesuffix(".md") + ".html" for page in nav_pages()} <= built
    evaluation = (tmp_path / "site" / "api" / "evaluation.html").read_text(encoding="utf-8")
    # a name a split module re-exports is documented once, where it is defined (docs_griffe.DefinedOnce)
    assert 'id="mimesis_gym.evaluation.plan.EvalConfig"' in evaluation
    assert 'id="mimesis_gym.evaluation.runner.EvalConfig"' not in evaluation
    assert 'id="mimesis_gym.evaluation.runner.run_eval"' in evaluation
