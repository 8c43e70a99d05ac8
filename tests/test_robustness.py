"""The robustness table (docs/evaluation.md, "User behaviours"): its numbers on hand-built records, and
``eval --user-behaviors`` end to end on AskEnv (tests/support/behavior_env.py), whose user plays them."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mimesis_gym.evaluation.html_report import INDEX_FIELDS
from mimesis_gym.evaluation.records import EpisodeRecord, unit_key
from mimesis_gym.evaluation.robustness import NOT_ROBUSTNESS, robustness_markdown, robustness_table
from mimesis_gym.evaluation.runner import EvalConfig, report_runs, run_eval
from mimesis_gym.evaluation.store import ResultsStore
from tests.support import behavior_env
from tests.support.behavior_env import ASK_ID

ENV_IDS = {"turtle": "mimesis/TurtleGym-v0", "travel": "mimesis/TravelGym-v0", "function": "mimesis/FunctionGym-v0",
           "persuade": "mimesis/PersuadeGym-v0", "abcd": "mimesis/ABCDBehavior-v0"}  # fmt: skip


def record(env: str, task: str, trial: int, score: float, behavior: str = "control", **fields: Any) -> EpisodeRecord:
    values: dict[str, Any] = {"agent": "oracle", "user": "scripted", "status": "ok", **fields}
    key = unit_key(values["agent"], values["user"], ENV_IDS[env], task, trial, trial, behavior)
    return EpisodeRecord(
        run_id="hand", judge="self", env_id=ENV_IDS[env], env=env, task_id=task, trial=trial, seed=trial, key=key,
        episode_score=score, user_behavior=behavior, max_score=1.0, **values,
    )  # fmt: skip


def hand_built() -> list[EpisodeRecord]:
    """Control and B3 of one agent; the numbers of each env are worked out in the test below."""
    return [
        # turtle, control: t1 (1 + 0)/2, t2 (1 + 1)/2 -> 75
        record("turtle", "t1", 0, 1.0),
        record("turtle", "t1", 1, 0.0),
        record("turtle", "t2", 0, 1.0),
        record("turtle", "t2", 1, 1.0),
        # turtle, B3: t1 0; t2 1.0 (exclude: the user failure left out) or (1 + 0.5)/2 (include)
        record("turtle", "t1", 0, 0.0, "B3", behavior_enacted=True),
        record("turtle", "t1", 1, 0.0, "B3", behavior_enacted=True),
        record("turtle", "t2", 0, 1.0, "B3", behavior_enacted=False),
        record("turtle", "t2", 1, 0.5, "B3", behavior_enacted=True, status="user_failure"),
        # travel: control 40, B3 20
        record("travel", "t3", 0, 0.4),
        record("travel", "t3", 0, 0.2, "B3", behavior_enacted=True),
        # function plays no behaviour: control only
        record("function", "t4", 0, 1.0),
        # persuade: B3 without any control episode: counted in the episodes, not in the Δ
        record("persuade", "t5", 0, 1.0, "B3", behavior_enacted=False),
        # ABCD, whose user is the policy, never enters the table
        record("abcd", "t6", 0, 0.9),
    ]


def test_robustness_numbers_on_hand_built_records():
    table = robustness_table(hand_built(), "exclude", {"scripted": "Scripted"})
    control, b3 = table.rows
    assert (control.user, control.agent, control.condition) == ("Scripted", "oracle", "control")
    assert control.envs == ["travel", "turtle", "function"]  # the env table's order, not the records'

    assert control.score == pytest.approx((75 + 40 + 100) / 3) and control.delta is None
    assert (control.enacted_share, control.n_episodes) == (None, 6)  # ABCD left out
    assert b3.envs == ["travel", "turtle"]  # persuade has no control score to compare with
    assert (b3.score, b3.control, b3.delta) == pytest.approx((35.0, 57.5, -22.5))
    assert (b3.n_episodes, b3.n_enacted, b3.enacted_share) == (5, 3, pytest.approx(0.6))
    travel, turtle, persuade = b3.by_env
    assert (turtle.env, turtle.score, turtle.control, turtle.delta) == ("turtle", 50.0, 75.0, -25.0)
    assert (turtle.n_episodes, turtle.enacted_share) == (3, pytest.approx(2 / 3))
    assert (travel.delta, travel.enacted_share) == (pytest.approx(-20.0), 1.0)
    assert (persuade.score, persuade.control, persuade.delta) == (100.0, None, None)


def test_user_failures_count_as_the_scoring_mode_counts_them():
    b3 = robustness_table(hand_built(), "include").rows[1]
    assert (b3.score, b3.control, b3.delta) == pytest.approx((28.75, 57.5, -28.75))
    assert (b3.n_episodes, b3.n_enacted, b3.enacted_share) == (6, 4, pytest.approx(4 / 6))


def test_no_table_when_only_control_was_played():
    control_only = [r for r in hand_built() if r.user_behavior == "control"]
    assert robustness_table(control_only, "exclude") is None
    assert robustness_markdown(None) == []


def test_the_section_says_what_a_delta_without_enactment_is_and_shows_the_share_beside_it():
    skipped = {"B3": {"function": "the env has no user who talks: nothing to play"}}
    lines = robustness_markdown(robustness_table(hand_built(), "exclude", {}, skipped))
    text = "\n".join(lines)
    assert lines[0] == "## Robustness to user behaviours" and NOT_ROBUSTNESS in text
    assert "| User | Agent | Condition | Envs | Score | Control | Δ vs control | Enacted | Episodes |" in lines
    assert "| scripted | oracle | B3 | 2 | 35.00 | 57.50 | -22.50 | 60% | 5 |" in lines
    assert "| scripted | oracle | control | 3 | 71.67 | 71.67 | — | — | 6 |" in lines
    assert "Not applicable (not played): B3 on function." in lines


# ------------------------------------------------------------------------------ end to end on AskEnv


def run(config: EvalConfig, out: Path) -> dict[str, Any]:
    asyncio.run(run_eval(config, out, progress=False))
    return json.loads((out / "summary.json").read_text())


@pytest.fixture
def ask_column(clean_env_table):
    """AskEnv as a ninth paper column, so that its rows enter the paper's table."""
    behavior_env.register(column=9)


def test_other_conditions_never_reach_the_paper_table(ask_column, tmp_path):
    """B3 costs the oracle every AskEnv episode at 3 turns: a leak would change the paper's table."""
    base = {"envs": ["ask", "function"], "agents": ["oracle", "scripted:noop"], "limit": 2, "max_turns": 3}
    control = run(EvalConfig(**base), tmp_path / "control")
    both = run(EvalConfig(**base, user_behaviors=["B3"]), tmp_path / "both")
    for key in ("sections", "extra", "mean_over_users", "paper_deltas", "abcd", "weights"):
        assert both[key] == control[key], key
    assert (tmp_path / "both" / "summary.csv").read_text() == (tmp_path / "control" / "summary.csv").read_text()
    assert control["robustness"] == {} and control["pass_k"] == {}
    b3 = next(row for row in both["robustness"]["rows"] if row["agent"] == "oracle" and row["condition"] == "B3")
    assert (b3["score"], b3["control"], b3["delta"], b3["enacted_share"]) == (0.0, 100.0, -100.0, 1.0)
    assert both["robustness"]["not_applicable"] == {
        "B3": {"function": "the env has no user who talks: nothing to play"}
    }
    text = (tmp_path / "both" / "summary.md").read_text()
    assert text.startswith("These tables are the control condition's; B3: see *Robustness*.")
    assert text.index("## Robustness to user behaviours") < text.index("Columns marked * were held out")
    assert "| Scripted | oracle | B3 | 1 | 0.00 | 100.00 | -100.00 | 100% | 2 |" in text


def test_records_carry_the_condition_its_enactment_and_the_max_score(clean_env_table, tmp_path):
    behavior_env.register()
    config = EvalConfig(envs=[ASK_ID], agents=["oracle"], user_behaviors=["B3", "B9"], limit=1, max_turns=4)
    summary = run(config, tmp_path)
    records = {r.user_behavior: r for r in ResultsStore(tmp_path / "episodes.jsonl").latest().values()}
    assert (records["control"].behavior_enacted, records["control"].behavior_turns) == (None, [])
    assert (records["B3"].behavior_enacted, records["B3"].behavior_turns) == (True, [1, 2])  # two dodged questions
    assert records["B3"].key.endswith("|B3") and records["B3"].episode_score == 1.0  # asked four times
    assert (records["B9"].behavior_enacted, records["B9"].episode_score) == (False, 1.0)  # told at once: no pressure
    assert {r.max_score for r in records.values()} == {1.0}
    b9 = next(row for row in summary["robustness"]["rows"] if row["condition"] == "B9")
    assert (b9["delta"], b9["enacted_share"]) == (0.0, 0.0)  # a Δ of 0 that measures nothing
    page = (tmp_path / "report.html").read_text()
    assert "Robustness to user behaviours" in page and "robustness.png" in page
    assert INDEX_FIELDS[-1] == "user_behavior" and '"B9"]' in page


def test_report_rebuilds_the_same_robustness_and_pass_k_tables(clean_env_table, tmp_path):
    behavior_env.register()
    config = EvalConfig(envs=[ASK_ID, "function"], agents=["oracle"], user_behaviors=["B3", "B13"], limit=2, trials=2,
                        max_turns=3)  # fmt: skip
    written = run(config, tmp_path / "run")
    assert written["pass_k"]["rows"] and written["robustness"]["rows"]
    shutil.copytree(tmp_path / "run", tmp_path / "copy")
    for name in ("summary.json", "summary.md", "report.html"):
        (tmp_path / "copy" / name).unlink()
    report_runs([tmp_path / "copy"], tmp_path / "copy")
    rebuilt = json.loads((tmp_path / "copy" / "summary.json").read_text())
    assert rebuilt["robustness"] == written["robustness"] and rebuilt["pass_k"] == written["pass_k"]
    assert (tmp_path / "copy" / "summary.md").read_text() == (tmp_path / "run" / "summary.md").read_text()
    b3 = next(row for row in written["pass_k"]["rows"] if row["env"] == "ask" and row["condition"] == "B3")
    assert (b3["trials"], b3["pass_hat_k"], b3["pass_at_k"]) == (2, [0.0, 0.0], [0.0, 0.0])


def test_with_a_judge_each_behaviour_episode_gets_a_reading_beside_the_rule(clean_env_table, tmp_path, fault_server):
    behavior_env.register()
    fault_server.script(*['ok:{"enacted": false, "turns": []}'] * 8)
    judge = f"openai:fault-model@{fault_server.base_url}"
    config = EvalConfig(envs=[ASK_ID], agents=["oracle"], user_behaviors=["B3"], judge=judge, limit=1, max_turns=4)
    summary = run(config, tmp_path)
    records = {r.user_behavior: r for r in ResultsStore(tmp_path / "episodes.jsonl").latest().values()}
    assert (records["B3"].behavior_enacted, records["B3"].behavior_judged) == (True, False)
    assert records["control"].behavior_judged is None  # control is never sent
    asked = [r["body"] for r in fault_server.requests if "Behaviour B3" in str(r["body"].get("messages"))]
    assert len(asked) == 1 and "USER 1: Why do you need to know that?" in asked[0]["messages"][1]["content"]
    b3 = next(row for row in summary["robustness"]["rows"] if row["condition"] == "B3")
    assert (b3["enacted_share"], b3["judged_share"], b3["n_judged"]) == (1.0, 0.0, 1)
    assert "| Enacted | Judge: enacted | Episodes |" in (tmp_path / "summary.md").read_text()
