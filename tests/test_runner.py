"""The evaluation runner (docs/evaluation.md, "Work units and records") with scripted agents and users."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mimesis_gym.core.scoring import episode_score
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.evaluation.runner import EvalConfig, build_plan, condition_plan, run_eval
from mimesis_gym.evaluation.store import ResultsStore
from mimesis_gym.users.registry import register_user
from tests.support.chat_models import ScriptedChatModel, refusal

VOLATILE = {"run_id", "worker", "started_at", "finished_at", "duration_s"}


def run(config, out, **kwargs):
    import asyncio

    return asyncio.run(run_eval(config, out, progress=False, **kwargs))


def stable(records):
    result = {}
    for record in records:
        data = record.model_dump(exclude=VOLATILE)
        for step in data["steps"]:
            step.pop("agent_latency_s")
            step.pop("step_latency_s")
        for entry in data["usage"].values():
            entry.pop("seconds", None)
        result[record.key] = data
    return result


def test_episode_scores_on_hand_written_records():
    assert episode_score("sum", [{"reward": r} for r in (0, 0, 0.5, 0)]) == 0.5
    assert episode_score("sum", [{"reward": r} for r in (0.7, 1.0, 0.4, 0.4)]) == pytest.approx(2.5)
    travel = [
        ("search", "x", 0.2),
        ("answer", "A2", 0.6),
        ("answer", "A1", 1.0),
        ("answer", "B4", 0.2),
        ("answer", "", 0.0),
        ("action", "y", 0.0),
    ]
    steps = [{"action_kind": k, "content": c, "reward": r} for k, c, r in travel]
    assert episode_score("per_aspect_best", steps, {"n_aspects": 3}) == pytest.approx(0.4)


def test_plan_order_and_keys():
    config = EvalConfig(envs=["function", "turtle"], agents=["oracle"], limit=2, trials=2, seed=5)
    units, planned = build_plan(config)
    assert planned == {"turtle": 2, "function": 2}
    assert [u.env for u in units][:4] == ["turtle"] * 4  # column order: travel, turtle, function, …
    assert units[0].key == f"oracle|scripted|mimesis/TurtleGym-v0|{units[0].task_id}|0|5"
    assert units[1].seed == 6


def test_an_env_named_several_ways_is_planned_once():
    config = EvalConfig(envs=["turtle", "TURTLE", " mimesis/TurtleGym-v0", "function", "turtle"], agents=["oracle"])
    assert config.envs == ["turtle", "function"]  # one spelling each, first-seen order
    units, planned = build_plan(config.model_copy(update={"limit": 2}))
    assert planned == {"turtle": 2, "function": 2} and len(units) == len({u.key for u in units}) == 4
    assert EvalConfig.model_validate_json(config.model_dump_json()).envs == config.envs


def test_smoke_writes_every_output_file(tmp_path):
    sections, counts = run(EvalConfig(envs=["turtle", "function"], agents=["scripted:noop"], limit=1), tmp_path)
    assert counts == {"ok": 2}
    for name in (
        "episodes.jsonl",
        "run.json",
        "summary.json",
        "summary.csv",
        "summary.md",
        "plots/avg_by_user.png",
        "plots/scores__Scripted.png",
        "plots/heatmap__scripted_noop.png",
        "plots/user_failures.png",
    ):
        assert (tmp_path / name).is_file(), name
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["status"] == "complete" and meta["plan"]["units"] == 2


def test_oracle_scores_the_maximum_and_records_recompute(tmp_path):
    sections, _ = run(EvalConfig(envs=["function", "intention"], agents=["oracle"], limit=3), tmp_path)
    row = sections[0].rows[0]
    assert row.scores["function"] == pytest.approx(100.0)
    for record in ResultsStore(tmp_path / "episodes.jsonl").read():
        assert record.status == "ok" and record.terminated
        rule = ENV_TABLE.find(record.env).env_class().scoring
        steps = [s.model_dump() for s in record.steps]
        assert episode_score(rule, steps, record.score_context) == pytest.approx(record.episode_score)


def test_runs_are_deterministic(tmp_path):
    config = EvalConfig(envs=["turtle", "persuade"], agents=["scripted:random"], limit=2, trials=2, max_turns=5)
    run(config, tmp_path / "a")
    run(config, tmp_path / "b")
    first = stable(ResultsStore(tmp_path / "a" / "episodes.jsonl").read())
    second = stable(ResultsStore(tmp_path / "b" / "episodes.jsonl").read())
    assert first == second and len(first) == 8


def test_user_failures_are_recorded_and_reported_apart(tmp_path, clean_user_registry):
    register_user("always-refuses", lambda **_: ScriptedChatModel([refusal()], suspend=False))
    config = EvalConfig(
        envs=["persuade"], agents=["oracle"], users=["always-refuses", "scripted"], limit=2, max_turns=3
    )
    sections, counts = run(config, tmp_path)
    assert counts == {"user_failure": 2, "ok": 2}
    records = [r for r in ResultsStore(tmp_path / "episodes.jsonl").read() if r.user == "always-refuses"]
    assert all(r.status == "user_failure" for r in records)
    assert all(step.user_failure == "persuadee:refusal" for r in records for step in r.steps)
    assert {f.kind for r in records for f in r.user_failures} == {"refusal"}
    refusing, scripted = sections
    assert refusing.rows[0].scores["persuade"] is None  # exclude mode: not measured
    assert scripted.rows[0].scores["persuade"] == pytest.approx(50.0, abs=0.01)  # 3 turns of the oracle
    config.user_failures = "include"
    sections, _ = run(config, tmp_path, resume=True)
    assert sections[0].rows[0].scores["persuade"] == 0.0


def test_resume_after_sigkill_with_a_torn_line(tmp_path):
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "mimesis_gym.cli",
        "eval",
        "--envs",
        "turtle,function",
        "--agent",
        "scripted:random:0.2",
        "--limit",
        "4",
        "--trials",
        "2",
        "--concurrency",
        "2",
        "--max-turns",
        "4",
        "--out",
        str(out),
        "--no-progress",
    ]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    episodes = out / "episodes.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if episodes.exists() and episodes.read_text().count("\n") >= 3:
            break
        time.sleep(0.05)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    done_before = episodes.read_text().count("\n")
    assert 3 <= done_before < 16
    with episodes.open("a") as handle:
        handle.write('{"schema_version": 1, "run_id": "torn')
    result = subprocess.run(
        [*command[:4], "--resume", "--out", str(out), "--no-progress"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    assert "torn last line" in result.stderr
    keys = [json.loads(line)["key"] for line in episodes.read_text().splitlines()]
    assert len(keys) == len(set(keys)) == 16
    units, _ = build_plan(EvalConfig(envs=["turtle", "function"], agents=["scripted:random:0.2"], limit=4, trials=2))
    assert set(keys) == {u.key for u in units}
    fresh = tmp_path / "fresh"
    subprocess.run([*command[:-2], str(fresh), "--no-progress"], check=True, capture_output=True)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sections"] == json.loads((fresh / "summary.json").read_text())["sections"]


def test_out_must_be_empty_without_resume(tmp_path, capsys):
    from mimesis_gym.cli import main

    (tmp_path / "x").write_text("")
    assert main(["eval", "--agent", "oracle", "--out", str(tmp_path)]) == 2
    assert "is not empty" in capsys.readouterr().err


def test_sigint_drains_and_exits_130_without_partial_records(tmp_path):
    out = tmp_path / "run"
    command = [
        sys.executable,
        "-m",
        "mimesis_gym.cli",
        "eval",
        "--envs",
        "turtle",
        "--agent",
        "scripted:random:0.2",
        "--limit",
        "8",
        "--concurrency",
        "2",
        "--max-turns",
        "6",
        "--out",
        str(out),
        "--no-progress",
        "--drain-timeout",
        "10",
    ]
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (out / "run.json").exists():
        time.sleep(0.05)
    time.sleep(0.5)
    child.send_signal(signal.SIGINT)
    _, stderr = child.communicate(timeout=60)
    assert child.returncode == 130, stderr
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "interrupted"
    lines = (out / "episodes.jsonl").read_text().splitlines() if (out / "episodes.jsonl").exists() else []
    assert all(json.loads(line)["status"] == "ok" for line in lines) and len(lines) < 8


def test_report_merges_runs_as_rows_and_sections(tmp_path, capsys):
    from mimesis_gym.cli import main

    run(EvalConfig(envs=["function", "turtle"], agents=["oracle"], limit=2), tmp_path / "a")
    run(EvalConfig(envs=["function", "turtle"], agents=["scripted:noop"], limit=2), tmp_path / "b")
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "b"), "--out", str(tmp_path / "merged")]) == 0
    out = capsys.readouterr().out
    assert "| scripted:noop |" in out and "| oracle |" in out
    summary = json.loads((tmp_path / "merged" / "summary.json").read_text())
    assert [row["agent"] for row in summary["sections"][0]["rows"]] == ["oracle", "scripted:noop"]
    run(EvalConfig(envs=["function"], agents=["oracle"], limit=1), tmp_path / "c")
    assert main(["report", str(tmp_path / "a"), str(tmp_path / "c"), "--out", str(tmp_path / "m2")]) == 2
    assert "differs from the first run" in capsys.readouterr().err


def test_paper_preset_needs_the_upstream_data(capsys):
    from mimesis_gym.cli import main

    assert main(["eval", "--paper", "--out", "/nonexistent/never-written"]) == 2
    assert "pass --data-dir" in capsys.readouterr().err
    assert not Path("/nonexistent").exists()


def test_upstream_tasks_through_data_dir(tmp_path, userrl_dir):
    config = EvalConfig(envs=["function"], agents=["oracle"], data_dir=str(userrl_dir), limit=3)
    sections, counts = run(config, tmp_path)
    records = ResultsStore(tmp_path / "episodes.jsonl").read()
    assert [r.task_id for r in records] and all(r.task_id.startswith("func-") for r in records)
    assert counts == {"ok": 3} and sections[0].rows[0].scores["function"] == 100.0


class TaskAwareUser:
    """Refuses on the first two claims; moves to Neutral on the third and Strongly Disagree on the fourth."""

    name = "task-aware"

    def __init__(self, claims):
        self.behaviour = dict(zip(claims, ["refuse", "refuse", "Neutral", "Strongly Disagree"], strict=True))

    async def chat(self, messages, *, max_tokens, temperature, seed, json_keys=None):
        from mimesis_gym.core.chat import ChatReply

        claim = next(c for c in self.behaviour if c in messages[1]["content"])
        stance = self.behaviour[claim]
        if stance == "refuse":
            return refusal()
        return ChatReply(text=json.dumps({"response": "I see.", "stance": stance}))


def test_user_failure_accounting_on_persuade(tmp_path, clean_user_registry):
    from mimesis_gym.envs.persuade.tasks import load_original_pack

    claims = [task.claim for task in load_original_pack().pool("test")[:4]]
    register_user("task-aware", lambda **_: TaskAwareUser(claims))
    config = EvalConfig(envs=["persuade"], agents=["oracle"], users=["task-aware"], limit=4, max_turns=4)
    sections, counts = run(config, tmp_path)
    row = sections[0].rows[0]
    assert counts == {"user_failure": 2, "ok": 2}
    assert row.scores["persuade"] == pytest.approx(75.0) and row.score_include["persuade"] == pytest.approx(37.5)
    cell = row.cells["persuade"]
    assert (cell["n_episodes"], cell["n_user_failure_episodes"], cell["user_failure_rate"]) == (4, 2, 0.5)
    assert cell["failures_by_kind"] == {"persuadee:refusal": 2}
    summary = (tmp_path / "summary.md").read_text()
    assert re.search(r"75\.00(\*\*)?†", summary) and "persuadee:refusal: 2 episodes" in summary and "50.0%" in summary


def test_workers_give_the_same_records_as_one_process(tmp_path):
    config = EvalConfig(
        envs=["turtle", "function"], agents=["scripted:random"], limit=3, trials=2, max_turns=4, concurrency=4
    )
    run(config, tmp_path / "local")
    config.workers = 2
    _, counts = run(config, tmp_path / "workers")
    assert counts == {"ok": 12}
    local = stable(ResultsStore(tmp_path / "local" / "episodes.jsonl").read())
    spread = stable(ResultsStore(tmp_path / "workers" / "episodes.jsonl").read())
    assert local == spread
    workers = {r.worker for r in ResultsStore(tmp_path / "workers" / "episodes.jsonl").read()}
    assert all(not worker.endswith(f":{os.getpid()}") for worker in workers)  # played in worker processes


def test_resume_refuses_records_of_tasks_that_are_no_longer_planned(tmp_path):
    """A task pack that changed under a run (ABCD's held-out rows, say) is not mixed into it."""
    from mimesis_gym.core.errors import ConfigurationError

    config = EvalConfig(envs=["function"], agents=["oracle"], limit=1, max_turns=4)
    out = tmp_path / "run"
    run(config, out)
    episodes = out / "episodes.jsonl"
    (record,) = [json.loads(line) for line in episodes.read_text().splitlines()]
    planned_key = record["key"]
    record["key"] = planned_key.replace(record["task_id"], "a-row-of-an-older-pack")
    assert record["key"] != planned_key
    episodes.write_text(json.dumps(record) + "\n")
    with pytest.raises(ConfigurationError, match=r"not in this run's plan.*a-row-of-an-older-pack"):
        run(config, out, resume=True)
    episodes.write_text(json.dumps({**record, "key": planned_key}) + "\n")
    run(config, out, resume=True)  # the planned record resumes as before


# ---------------------------------------------------------------------- user behaviours (--user-behaviors)


def test_the_plan_plays_each_condition_on_the_envs_that_play_it_control_first(clean_env_table):
    from tests.support.behavior_env import ASK_ID, register

    register()
    config = EvalConfig(envs=["function", ASK_ID], agents=["oracle"], user_behaviors=["b9", "B3", "B9"], limit=2)
    assert config.user_behaviors == ["control", "B9", "B3"]  # canonical, once each, control added first
    units, planned = build_plan(config)
    assert planned == {"function": 2, "ask": 2}
    assert [(u.behavior, u.env) for u in units] == [
        *[("control", "function")] * 2, *[("control", "ask")] * 2, *[("B9", "ask")] * 2, *[("B3", "ask")] * 2,
    ]  # fmt: skip
    control = units[2]
    assert control.key == f"oracle|scripted|{ASK_ID}|ask-1|0|0"  # exactly as before --user-behaviors
    assert units[4].key == f"oracle|scripted|{ASK_ID}|ask-1|0|0|B9" and len({u.key for u in units}) == 8
    skipped = condition_plan(config)
    assert skipped.played == {"function": ("control",), "ask": ("control", "B9", "B3")}
    assert skipped.skipped == {c: {"function": "the env has no user who talks: nothing to play"} for c in ("B9", "B3")}
    assert skipped.summary_line() == "user behaviours not applicable, skipped: B9 on function; B3 on function"


def test_a_condition_no_env_plays_is_refused_with_what_each_env_plays(clean_env_table):
    from mimesis_gym.core.errors import ConfigurationError
    from tests.support.behavior_env import ASK_ID, register

    register()
    with pytest.raises(ConfigurationError) as refused:
        build_plan(EvalConfig(envs=["function", "search"], agents=["oracle"], user_behaviors=["B3", "B9"]))
    assert str(refused.value) == (
        "--user-behaviors B3, B9: no env of this run (function, search) plays them; what each env plays: "
        "function: control; search: control"
    )
    with pytest.raises(ConfigurationError, match=r"--user-behaviors B5: .* ask: control, B1, B2, B3, B4, B6, "):
        build_plan(EvalConfig(envs=[ASK_ID], agents=["oracle"], user_behaviors=["B5"]))
    with pytest.raises(ValueError, match="unknown user behavior 'B14'; known: control, B1"):
        EvalConfig(user_behaviors=["B14"])


def test_a_run_made_before_user_behaviors_resumes_on_its_own_keys(tmp_path):
    """Old run.json (no user_behaviors) and old records (no behaviour fields): nothing plays again."""
    from mimesis_gym.cli import main
    from mimesis_gym.evaluation.rundir import config_fingerprint

    out = tmp_path / "run"
    run(EvalConfig(envs=["function"], agents=["oracle"], limit=2, max_turns=4), out)
    new_fields = ("user_behavior", "behavior_enacted", "behavior_turns", "max_score")
    lines = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    (out / "episodes.jsonl").write_text("".join(
        json.dumps({k: v for k, v in line.items() if k not in new_fields}) + "\n" for line in lines
    ))  # fmt: skip
    meta = json.loads((out / "run.json").read_text())
    del meta["config"]["user_behaviors"]
    meta["config_fingerprint"] = config_fingerprint(meta["config"])
    (out / "run.json").write_text(json.dumps(meta))
    assert main(["eval", "--resume", "--out", str(out), "--user-behaviors", "control", "--no-progress"]) == 0
    meta = json.loads((out / "run.json").read_text())
    assert meta["resumes"][-1] | {"at": None} == {"at": None, "skipped": 2, "run": 0}
    assert meta["config"]["user_behaviors"] == ["control"]
    assert {r.user_behavior for r in ResultsStore(out / "episodes.jsonl").read()} == {"control"}


@pytest.mark.parametrize("env", [entry.short for entry in ENV_TABLE if entry.kind == "conversation"])
def test_each_shipped_env_is_planned_with_exactly_the_behaviours_its_user_plays(env):
    from mimesis_gym.behaviors.registry import BEHAVIOR_IDS
    from mimesis_gym.core.errors import ConfigurationError

    plays = ENV_TABLE.find(env).env_class().user_behaviors.applicable
    config = EvalConfig(envs=[env], agents=["oracle"], user_behaviors=list(BEHAVIOR_IDS), limit=1, split="demo")
    if not plays:
        with pytest.raises(ConfigurationError, match=rf"no env of this run \({env}\) plays them"):
            build_plan(config)
        return
    missing = sorted(set(BEHAVIOR_IDS) - set(plays), key=BEHAVIOR_IDS.index)
    if missing:  # asking for one the env does not play names it
        with pytest.raises(ConfigurationError, match=rf"--user-behaviors {missing[0]}"):
            build_plan(config)
    config = EvalConfig(envs=[env], agents=["oracle"], user_behaviors=list(plays), limit=1, split="demo")
    units, _ = build_plan(config)
    assert [unit.behavior for unit in units] == ["control", *plays]
    assert condition_plan(config).skipped == {}


def test_behavior_agents_play_the_hard_users_and_the_others_control_only():
    config = EvalConfig(
        envs=["turtle"], agents=["oracle", "scripted:noop"], user_behaviors=["B3"], behavior_agents=["oracle"], limit=1
    )
    units, _ = build_plan(config)
    assert [(unit.agent, unit.behavior) for unit in units] == [
        ("oracle", "control"), ("oracle", "B3"), ("scripted:noop", "control"),
    ]  # fmt: skip
    with pytest.raises(ValueError, match="behavior_agents names tiny, not an agent of the run"):
        EvalConfig(envs=["turtle"], agents=["oracle"], behavior_agents=["tiny"])
