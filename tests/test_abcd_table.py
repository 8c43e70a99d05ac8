"""The ABCD table: hand-written records, reported apart from the eight-env table (never in Avg or MR)."""

import json

import pytest

from mimesis_gym.evaluation.abcd_table import abcd_summaries
from mimesis_gym.evaluation.records import EpisodeRecord, StepRecord
from mimesis_gym.evaluation.summary import summarise_and_write


def record(env, task_id, score, *, condition=None, parts=None, agent="policy", user="scripted"):
    step = StepRecord(
        turn=1, action_kind="action", content="hi", valid_action=True, observation="ok", reward=score,
        reward_parts=parts or {}, terminated=True, truncated=False, user_failure=None,
    )  # fmt: skip
    return EpisodeRecord(
        run_id="r", agent=agent, user=user, judge="self", env_id=f"mimesis/{env}", env=env, task_id=task_id,
        trial=0, seed=0, key=f"{agent}|{user}|{env}|{task_id}|0|0", status="ok", steps=[step], rewards=[score],
        n_turns=1, terminated=True, truncated=False, episode_score=score,
        score_context={"condition": condition} if condition else {},
    )  # fmt: skip


def abcd_records():
    return [
        record("abcd", "a1", 0.8, condition="goalpost_shifting",
               parts={"exhibit": 1.0, "placement": 0.5, "naturalness": 0.5, "on_task": 1.0, "announced": 0}),
        record("abcd", "a2", 0.4, condition="goalpost_shifting",
               parts={"exhibit": 0.5, "placement": 0.5, "naturalness": 0.5, "on_task": 0.5, "announced": 1}),
        record("abcd", "c1", 0.6, condition="control",
               parts={"cooperative": 1.0, "naturalness": 0.0, "on_task": 0.0, "exhibit": None}),
    ]  # fmt: skip


def test_per_condition_means_and_headline():
    (summary,) = abcd_summaries(abcd_records())
    assert summary.n_episodes == 3
    assert summary.score == pytest.approx(60.0)  # mean R over all rows
    assert summary.behaviors == pytest.approx(60.0) and summary.control == pytest.approx(60.0)
    goal = summary.conditions["goalpost_shifting"]
    assert goal.n_episodes == 2 and goal.reward == pytest.approx(60.0)
    assert goal.parts["exhibit"] == pytest.approx(75.0) and goal.parts["announced"] == pytest.approx(50.0)
    assert goal.parts["cooperative"] is None
    control = summary.conditions["control"]
    assert control.parts["cooperative"] == pytest.approx(100.0) and control.parts["exhibit"] is None
    assert list(summary.conditions) == ["goalpost_shifting", "control"]  # control last


def test_summary_files_keep_abcd_out_of_avg_and_mr(tmp_path):
    records = [record("turtle", "t1", 1.0), record("turtle", "t2", 0.0), *abcd_records()]
    sections = summarise_and_write(records, {"turtle": 2, "abcd": 3}, "exclude", None, tmp_path)
    (row,) = sections[0].rows
    assert row.avg == pytest.approx(50.0) and "abcd" not in row.scores
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["abcd"][0]["score"] == pytest.approx(60.0) and "abcd" not in summary["weights"]
    csv_text = (tmp_path / "summary.csv").read_text()
    assert ",policy,abcd,60.0" in csv_text
    markdown = (tmp_path / "summary.md").read_text()
    assert "## ABCD realistic behaviors" in markdown
    assert "| goalpost_shifting | 2 | 60.00 | 75.00 | 50.00 | 50.00 | 75.00 | — | 50.00 |" in markdown


def test_an_abcd_only_run_writes_just_the_abcd_table(tmp_path):
    sections = summarise_and_write(abcd_records(), {"abcd": 3}, "exclude", None, tmp_path)
    assert sections == []
    markdown = (tmp_path / "summary.md").read_text()
    assert "## ABCD realistic behaviors" in markdown and "| Agent | Travel" not in markdown
