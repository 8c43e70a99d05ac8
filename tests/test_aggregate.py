"""The paper's aggregation protocol (docs/evaluation.md, "Scoring") and report --from-scores."""

import json

import pytest

from mimesis_gym.agents.registry import RELEASED_AGENTS
from mimesis_gym.cli import main
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.aggregate import (
    PAPER_DELTAS,
    env_score,
    mean_ranks,
    paper_deltas,
    released_alias,
    task_scores,
    weighted_avg,
)

UPSTREAM_TEST_COUNTS = ENV_TABLE.avg_weights()
DITTO_BASE = {
    "travel": 6.63,
    "turtle": 19.48,
    "function": 0.0,
    "tau": 3.03,
    "persuade": 50.40,
    "intention": 183.75,
    "telepathy": 46.34,
    "search": 30.40,
}


def test_travel_sets_are_pooled_as_one_env():
    scores = task_scores([("x1", 1.0), ("x2", 0.0), ("y1", 0.25)])
    assert env_score(scores) * 100 == pytest.approx(41.6667, abs=1e-3)  # not the mean of set means, 37.50


def test_trials_are_averaged_per_task_first():
    scores = task_scores([("T1", 1.0), ("T1", 0.0), ("T1", 0.0), ("T2", 1.0)])
    assert env_score(scores) * 100 == pytest.approx(66.6667, abs=1e-3)  # not the episode mean, 50.00


def test_worked_example_avg():
    avg, partial = weighted_avg(DITTO_BASE, UPSTREAM_TEST_COUNTS)
    assert abs(avg - 19.5292) < 1e-4 and not partial
    assert sum(DITTO_BASE.values()) / 8 == pytest.approx(42.50, abs=5e-3)


def test_mr_with_ties_on_displayed_values():
    rows = {
        "A": dict(zip(DITTO_BASE, [10, 5, 0, 30, 50, 180, 40, 30.004], strict=True)),
        "B": dict(zip(DITTO_BASE, [20, 5, 1, 10, 40, 190, 40, 30.001], strict=True)),
        "C": dict(zip(DITTO_BASE, [20, 5, 2, 20, 40, 170, 30, 25], strict=True)),
    }
    ranks = mean_ranks(rows)
    assert ranks["A"] == (1.875, False) and ranks["B"] == (1.875, False) and ranks["C"] == (2.25, False)
    rows["C"]["tau"] = None
    ranks = mean_ranks(rows)
    assert ranks["A"][0] == 1.875 and ranks["B"][0] == 1.75
    assert ranks["C"][0] == pytest.approx(16 / 7) and ranks["C"][1] is True


def test_avg_over_remaining_columns_is_marked():
    scores = dict(DITTO_BASE, persuade=None)
    avg, partial = weighted_avg(scores, UPSTREAM_TEST_COUNTS)
    assert partial and avg == pytest.approx((19724.46 - 2116.80) / (1010 - 42), abs=1e-3)


def test_report_from_scores_prints_the_worked_example(tmp_path, capsys):
    table = tmp_path / "scores.csv"
    table.write_text(
        "user,agent,travel,turtle,function,tau,persuade,intention,telepathy,search\n"
        "Ditto-8B,Base,6.63,19.48,0.00,3.03,50.40,183.75,46.34,30.40\n"
        "Ditto-8B,Other,7.00,20.00,1.00,3.00,50.00,180.00,40.00,\n"
        "MIMESIS-9B,Base,5.00,10.00,0.00,3.00,40.00,150.00,40.00,30.00\n"
    )
    assert main(["report", "--from-scores", str(table), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert "| Base | 6.63 | 19.48 |" in out and "19.53" in out
    assert "## Mean over 2 users" in out and "—" in out and "‡" in out
    assert "Δ_sim" not in out  # no released agents compared
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["paper_deltas"] == {}
    base = summary["sections"][0]["rows"][0]
    assert abs(base["avg"] - 19.5292) < 1e-4
    assert (tmp_path / "out" / "summary.csv").read_text().splitlines()[0].startswith("user,judge,agent,column,value")
    plots = sorted(p.name for p in (tmp_path / "out" / "plots").iterdir())
    assert plots == [
        "avg_by_user.png",
        "heatmap__Base.png",
        "heatmap__Other.png",
        "scores__Ditto-8B.png",
        "scores__MIMESIS-9B.png",
    ]


def test_report_rejects_a_table_without_env_columns(tmp_path, capsys):
    table = tmp_path / "bad.csv"
    table.write_text("user,agent,travel\nu,a,1\n")
    assert main(["report", "--from-scores", str(table), "--out", str(tmp_path / "o")]) == 2
    assert "missing columns" in capsys.readouterr().err


def test_paper_deltas_compare_released_agents_by_alias_or_label():
    assert {alias for pair in PAPER_DELTAS.values() for alias in pair} <= set(RELEASED_AGENTS)
    assert released_alias("CSD-Agent") == "csd-agent" and released_alias("mine", "CSD") == "csd-agent"
    assert released_alias("mine", "GRPO w. MIMESIS-9B (UserRL+)") == "userrl-plus-agent"
    assert released_alias("mine", "something else") is None and released_alias("base") is None
    avgs = {"userrl-agent": 26.10, "userrl-plus-agent": 29.54, "csd-agent": 31.09}
    assert paper_deltas(avgs) == pytest.approx({"Δ_sim": 29.54 - 26.10, "Δ_CSD": 31.09 - 29.54})
    assert paper_deltas({"userrl-agent": 1.0, "userrl-plus-agent": None}) == {"Δ_sim": None}
    assert paper_deltas({"csd-agent": 1.0, "base-agent": 2.0}) == {}


def test_report_adds_the_avg_per_user_table_with_both_deltas(tmp_path, capsys):
    rows = {
        ("Ditto-8B", "userrl-agent", ""): [6.63, 19.48, 0.00, 3.03, 50.40, 183.75, 46.34, 30.40],
        ("Ditto-8B", "userrl-plus-agent", ""): [7.00, 20.00, 1.00, 3.00, 50.00, 180.00, 40.00, 31.00],
        ("Ditto-8B", "my-csd", "CSD"): [8.00, 22.00, 2.00, 4.00, 52.00, 185.00, 48.00, 33.00],
        ("MIMESIS-9B", "userrl-agent", ""): [5.00, 10.00, 0.00, 3.00, 40.00, 150.00, 40.00, 30.00],
        ("MIMESIS-9B", "userrl-plus-agent", ""): [6.00, 12.00, 0.00, 4.00, 44.00, 160.00, 42.00, 30.00],
    }
    table = tmp_path / "scores.csv"
    lines = ["user,agent,label," + ",".join(DITTO_BASE)]
    lines += [",".join([*key, *(f"{v:.2f}" for v in values)]) for key, values in rows.items()]
    table.write_text("\n".join(lines) + "\n")
    assert main(["report", "--from-scores", str(table), "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out

    def avg(key):
        return weighted_avg(dict(zip(DITTO_BASE, rows[key], strict=True)), UPSTREAM_TEST_COUNTS)[0]

    ditto = {a: avg(("Ditto-8B", a, "")) for a in ("userrl-agent", "userrl-plus-agent")}
    ditto["csd-agent"] = avg(("Ditto-8B", "my-csd", "CSD"))
    mimesis = {a: avg(("MIMESIS-9B", a, "")) for a in ("userrl-agent", "userrl-plus-agent")}
    sim = [ditto["userrl-plus-agent"] - ditto["userrl-agent"], mimesis["userrl-plus-agent"] - mimesis["userrl-agent"]]
    csd = ditto["csd-agent"] - ditto["userrl-plus-agent"]
    assert "| User | GRPO w. GPT-5.5 (UserRL) | GRPO w. MIMESIS-9B (UserRL+) | CSD | Δ_sim | Δ_CSD |" in out
    assert (
        f"| Ditto-8B | {ditto['userrl-agent']:.2f} | {ditto['userrl-plus-agent']:.2f} | {ditto['csd-agent']:.2f} "
        f"| {sim[0]:+.2f} | {csd:+.2f} |"
    ) in out
    assert (
        f"| MIMESIS-9B | {mimesis['userrl-agent']:.2f} | {mimesis['userrl-plus-agent']:.2f} | — | {sim[1]:+.2f} | — |"
        in out
    )
    mean_row = next(line for line in out.splitlines() if line.startswith("| Mean over 2 users | ") and "Δ" not in line)
    assert mean_row.endswith(f"| {(sim[0] + sim[1]) / 2:+.2f} | {csd:+.2f} |")  # deltas paired within a user
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    deltas = summary["paper_deltas"]
    assert deltas["agents"] == ["userrl-agent", "userrl-plus-agent", "csd-agent"]
    assert deltas["by_user"]["Ditto-8B"]["Δ_CSD"] == pytest.approx(csd)
    assert deltas["mean"]["Δ_sim"] == pytest.approx(sum(sim) / 2)
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<th>Δ_sim</th><th>Δ_CSD</th>" in html
