"""docs/behaviors.md shows the envs' own declarations: the applicability table and the registry."""

from __future__ import annotations

from pathlib import Path

from mimesis_gym.behaviors.registry import behaviors
from mimesis_gym.envs.behavior_table import applicability, applicability_markdown

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs/behaviors.md"
START, END = "<!-- applicability:start -->", "<!-- applicability:end -->"


def test_the_docs_table_is_the_envs_declarations():
    text = DOC.read_text(encoding="utf-8")
    shown = text.split(START, 1)[1].split(END, 1)[0].strip()
    assert shown == applicability_markdown(), (
        "docs/behaviors.md is out of date: paste `mimesis-gym list behaviors` between the applicability markers"
    )


def test_the_docs_list_every_behaviour_as_the_registry_words_it():
    text = DOC.read_text(encoding="utf-8")
    for entry in behaviors().values():
        assert f"| {entry.id} | {entry.name.replace('_', ' ')} | {entry.user_directive} |" in text


def test_every_conversation_env_is_in_the_table_with_a_reason_for_each_gap():
    rows = applicability()
    assert {entry.short for entry, _ in rows} >= {"travel", "turtle", "function", "tau", "search", "abcd"}
    for entry, spec in rows:
        assert all(reason.strip() for reason in spec.not_applicable.values()), entry.short
