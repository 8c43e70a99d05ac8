"""pass^k and pass@k (docs/evaluation.md, "pass^k and pass@k"): the estimator against hand-computed values
and the table on hand-built records (success, scoring modes, unequal trial counts, conditions)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import pytest

from mimesis_gym.evaluation.passk import pass_at_k, pass_hat_k, pass_k_markdown, pass_k_table, succeeded
from mimesis_gym.evaluation.records import EpisodeRecord, unit_key


def record(task: str, trial: int, score: float, **fields: Any) -> EpisodeRecord:
    """An episode of oracle with the scripted user on TurtleGym (max score 1 unless given)."""
    values: dict[str, Any] = {
        "agent": "oracle", "user": "scripted", "env": "turtle", "status": "ok", "max_score": 1.0,
        "user_behavior": "control", **fields,
    }  # fmt: skip
    key = unit_key(values["agent"], values["user"], "mimesis/TurtleGym-v0", task, trial, trial, values["user_behavior"])
    return EpisodeRecord(
        run_id="hand", judge="self", env_id="mimesis/TurtleGym-v0", task_id=task, trial=trial, seed=trial, key=key,
        episode_score=score, **values,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("n", "c", "hat", "at"),
    [
        (3, 2, [Fraction(2, 3), Fraction(1, 3), Fraction(0)], [Fraction(2, 3), Fraction(1), Fraction(1)]),
        (4, 1, [Fraction(1, 4), 0, 0, 0], [Fraction(1, 4), Fraction(1, 2), Fraction(3, 4), Fraction(1)]),
        (3, 3, [1, 1, 1], [1, 1, 1]),
        (3, 0, [0, 0, 0], [0, 0, 0]),
        (5, 3, [Fraction(3, 5), Fraction(3, 10), Fraction(1, 10), 0, 0], [Fraction(3, 5), Fraction(9, 10), 1, 1, 1]),
    ],
)
def test_the_estimators_match_hand_computed_values(n, c, hat, at):
    assert [pass_hat_k(n, c, k) for k in range(1, n + 1)] == pytest.approx([float(v) for v in hat])
    assert [pass_at_k(n, c, k) for k in range(1, n + 1)] == pytest.approx([float(v) for v in at])


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, 1, 0), (3, 1, 4), (2, -1, 1)])
def test_the_estimators_refuse_impossible_counts(n, c, k):
    with pytest.raises(ValueError, match="0 <= c <= n and 1 <= k <= n"):
        pass_hat_k(n, c, k)
    with pytest.raises(ValueError, match="0 <= c <= n and 1 <= k <= n"):
        pass_at_k(n, c, k)


def test_success_is_reaching_the_tasks_best_score_within_float_rounding():
    assert succeeded(record("t", 0, 1.0 - 5e-7)) is True  # the demo's perfect story sums to 1.0000000000000002
    assert succeeded(record("t", 0, 0.999)) is False
    assert succeeded(record("t", 0, 2.4, max_score=2.4)) is True  # IntentionGym: the task's own maximum
    assert succeeded(record("t", 0, 1.0, max_score=None)) is None  # an older record: unknown
    assert succeeded(record("t", 0, 0.0, max_score=0.0)) is None  # nothing to reach (HumanReplay)


def three_trials() -> list[EpisodeRecord]:
    """Task a: 2 of 3 succeed; task b: 1 of 3, its third trial a user failure."""
    return [
        record("a", 0, 1.0),
        record("a", 1, 0.2),
        record("a", 2, 1.0),
        record("b", 0, 0.0),
        record("b", 1, 1.0),
        record("b", 2, 0.0, status="user_failure"),
    ]


def test_the_table_averages_tasks_and_uses_the_trials_that_count():
    (row,) = pass_k_table(three_trials(), "include").rows
    assert (row.n_tasks, row.trials, row.tasks_per_k) == (2, 3, [2, 2, 2])
    assert row.pass_hat_k == pytest.approx([(2 / 3 + 1 / 3) / 2, (1 / 3 + 0) / 2, 0.0])
    assert row.pass_at_k == pytest.approx([(2 / 3 + 1 / 3) / 2, (1 + 2 / 3) / 2, 1.0])
    (row,) = pass_k_table(three_trials(), "exclude").rows  # b's user failure leaves b with 2 trials, 1 success
    assert (row.trials, row.tasks_per_k) == (3, [2, 2, 1])
    assert row.pass_hat_k == pytest.approx([(2 / 3 + 1 / 2) / 2, (1 / 3 + 0) / 2, 0.0])
    assert row.pass_at_k == pytest.approx([(2 / 3 + 1 / 2) / 2, (1 + 1) / 2, 1.0])


def test_each_condition_env_and_agent_is_its_own_row_control_first():
    records = [
        *three_trials(),
        *(record("a", t, 1.0, user_behavior="B3") for t in range(3)),
        *(record("a", t, 0.0, agent="tiny") for t in range(2)),
        *(record("a", t, 1.0, env="function", user="mimesis-9b") for t in range(2)),
        *(record("a", t, 1.0, env="function") for t in range(2)),
    ]
    table = pass_k_table(list(reversed(records)), "exclude", {"mimesis-9b": "MIMESIS-9B"})
    cells = [(row.user, row.agent, row.env, row.condition) for row in table.rows]
    assert cells == [
        ("scripted", "oracle", "turtle", "control"),  # envs in the env table's order, not the records'
        ("scripted", "oracle", "turtle", "B3"),
        ("scripted", "oracle", "function", "control"),
        ("MIMESIS-9B", "oracle", "function", "control"),
        ("scripted", "tiny", "turtle", "control"),
    ]
    assert table.rows[1].pass_hat_k == [1.0, 1.0, 1.0] and table.rows[4].pass_at_k == [0.0, 0.0]


def test_records_without_a_max_score_do_not_count():
    records = [record("a", 0, 1.0), record("a", 1, 1.0, max_score=None), record("a", 2, 0.0)]
    (row,) = pass_k_table(records, "exclude").rows
    assert (row.trials, row.pass_hat_k) == (2, [0.5, 0.0])


def test_no_table_without_two_trials_of_a_task():
    assert pass_k_table([record("a", 0, 1.0), record("b", 0, 0.0)], "exclude") is None
    assert pass_k_table([record("a", 0, 1.0), record("a", 1, 1.0, status="user_failure")], "exclude") is None
    assert pass_k_markdown(None) == []


def test_the_markdown_shows_pass_hat_then_pass_at_for_each_k():
    table = pass_k_table(three_trials(), "include")
    lines = pass_k_markdown(table)
    assert lines[0] == "## pass^k and pass@k"
    header = next(line for line in lines if line.startswith("| User"))
    assert header == "| User | Agent | Env | Condition | Tasks | pass^1 | pass^2 | pass^3 | pass@2 | pass@3 |"
    assert (
        lines[lines.index(header) + 2]
        == "| scripted | oracle | Turtle | control | 2 | 0.500 | 0.167 | 0.000 | 0.833 | 1.000 |"
    )
