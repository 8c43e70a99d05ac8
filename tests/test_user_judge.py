"""The users report's LLM judge: its prompt, its verdicts, and the report with a judge served over
loopback HTTP (docs/users-report.md, "Role fidelity")."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mimesis_gym.core.disclosure import DisclosureItem
from mimesis_gym.evaluation.user_judge import DialogueVerdict, judge_messages, judged_rates, parse_verdict
from mimesis_gym.evaluation.user_metrics import Exchange, UserDialogue
from mimesis_gym.evaluation.users_report import UsersReportConfig, run_users_report

DIALOGUE = UserDialogue(
    env="intention",
    user="u",
    task_id="t",
    exchanges=(Exchange("What colour?", "Blue, I think."), Exchange("Anything else?", "How can I help you today?")),
    items=(DisclosureItem("colour", "preferred colour", ("blue",)),),
)


def test_the_prompt_numbers_the_replies_and_lists_the_hidden_facts() -> None:
    system, user = judge_messages(DIALOGUE)
    assert system["role"] == "system" and '"assistant_like"' in system["content"]
    assert "- preferred colour: blue" in user["content"]
    assert "USER reply 1: Blue, I think." in user["content"]
    assert "USER reply 2: How can I help you today?" in user["content"]


def test_verdicts_keep_numbers_that_name_replies_and_refuse_other_shapes() -> None:
    verdict = parse_verdict({"assistant_like": [2, 7, 0], "contradictions": []}, replies=2)
    assert verdict == DialogueVerdict(2, frozenset({2}), frozenset())
    for bad in ({"assistant_like": "2", "contradictions": []}, {"assistant_like": [True], "contradictions": []}):
        with pytest.raises(ValueError, match="not a list of reply numbers"):
            parse_verdict(bad, replies=2)


def test_rates_count_flagged_replies_over_judged_ones_and_failures_apart() -> None:
    verdicts = [DialogueVerdict(2, frozenset({2}), frozenset()), DialogueVerdict(3, frozenset(), frozenset({1})), None]
    assert judged_rates(verdicts, asked=3) == {
        "assistant_like": 0.2,
        "contradictions": 0.2,
        "judged_replies": 5,
        "judge_failures": 1,
    }
    assert judged_rates([None], asked=1)["assistant_like"] is None


def report(out: Path, judge: str) -> dict:
    config = UsersReportConfig(
        users=["scripted"], agent="scripted:noop", envs=["intention"], limit=2, max_turns=2, judge=judge
    )
    return asyncio.run(run_users_report(config, out, progress=False))


def test_a_judge_over_http_flags_replies_in_the_report(tmp_path: Path, fault_server) -> None:
    fault_server.script(*['ok:{"assistant_like": [1], "contradictions": [1, 2]}'] * 2)
    judged = report(tmp_path / "r", f"openai:fault-model@{fault_server.base_url}")["users"]["scripted"]
    replies = judged["replies"]
    assert judged["dialogues"] == 2 and replies == 4  # 2 tasks, 2 replies each
    assert judged["judge"] == {
        "assistant_like": 2 / 4,
        "contradictions": 4 / 4,
        "judged_replies": 4,
        "judge_failures": 0,
    }
    asked = [request["body"] for request in fault_server.requests]
    assert len(asked) == 2 and all(body["temperature"] == 0 for body in asked)
    assert "USER reply 2:" in asked[0]["messages"][1]["content"]
    markdown = (tmp_path / "r" / "users_report.md").read_text()
    assert "| acts as assistant (judge) | 50% |" in markdown and "| contradictions (judge) | 100% |" in markdown


def test_a_judge_that_answers_nonsense_is_counted_as_failing(tmp_path: Path, fault_server) -> None:
    fault_server.script(*["ok:I cannot judge this."] * 8)
    judged = report(tmp_path / "r", f"openai:fault-model@{fault_server.base_url}")["users"]["scripted"]
    assert judged["judge"]["judge_failures"] == 2 and judged["judge"]["assistant_like"] is None


def test_without_a_judge_the_report_has_no_judge_rows(tmp_path: Path) -> None:
    config = UsersReportConfig(users=["scripted"], agent="scripted:noop", envs=["intention"], limit=1, max_turns=2)
    assert asyncio.run(run_users_report(config, tmp_path, progress=False))["users"]["scripted"]["judge"] is None
    assert "(judge)" not in (tmp_path / "users_report.md").read_text()
