"""``users-report``: the env's disclosure items, the runs it makes, the report it writes, the CLI."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.core.disclosure import asked, revealed
from mimesis_gym.envs import ENV_TABLE, register_env
from mimesis_gym.evaluation.user_metrics import first_reveals, unprompted_disclosure
from mimesis_gym.evaluation.users_report import (
    UsersReportConfig,
    customer_alias,
    default_envs,
    human_reference,
    is_customer_env,
    run_users_report,
)
from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[1]
PROBE = "scripted:noop"
METRIC_KEYS = {
    "disclosure_curve", "unprompted_disclosure", "answered_directly", "answer_completeness", "role_faults",
    "reply_words", "hedging", "homogeneity", "self_contradiction", "failures", "replies", "dialogues",
}  # fmt: skip


def play(env_id: str, action: str, seed: int = 0) -> tuple[object, str]:
    env = gym.make(env_id, user="scripted").unwrapped
    env.reset(seed=seed)
    return env, env.step(action)[0]


def test_intention_items_are_revealed_by_the_scripted_user_when_asked() -> None:
    env = gym.make("mimesis/IntentionGym-v0", user="scripted").unwrapped
    env.reset(seed=3)
    items = env.disclosure_items()
    assert len(items) == len(env.task.missing_details)
    detail = env.task.missing_details[0]
    assert asked(items[0], detail.inquiry)
    reply = env.step(f"[action] {detail.inquiry}")[0]
    assert revealed(items[0], reply), reply
    assert not any(revealed(item, reply) for item in items[1:])


def test_travel_items_follow_the_pack_keywords() -> None:
    env = gym.make("mimesis/TravelGym-v0", user="scripted").unwrapped
    env.reset(seed=0)
    items = env.disclosure_items()
    assert [item.key for item in items] == [p.id for p in env.task.numbered]
    probe = env.task.numbered[0].pref.meta.probe
    assert asked(items[0], probe)
    reply = env.step(f"[action] {probe}")[0]
    assert revealed(items[0], reply), reply


def test_tau_items_are_the_customers_facts_and_the_scripted_user_gives_its_name() -> None:
    env = gym.make("mimesis/TauGym-v0", user="scripted").unwrapped
    env.reset(seed=0)
    items = {item.key.split("-")[0]: item for item in env.disclosure_items()}
    assert "name" in items and "zip" in items
    reply = env.step("[action] Could you tell me your first and last name and your zip code?")[0]
    assert revealed(items["name"], reply) and revealed(items["zip"], reply), reply


@pytest.mark.parametrize(
    ("env_id", "expect_items"),
    [("mimesis/TurtleGym-v0", True), ("mimesis/TelepathyGym-v0", True), ("mimesis/ABCDBehavior-v0", True),
     ("mimesis/FunctionGym-v0", False), ("mimesis/SearchGym-v0", False), ("mimesis/PersuadeGym-v0", False)],
)  # fmt: skip
def test_which_envs_have_items(env_id: str, expect_items: bool) -> None:
    env = gym.make(env_id, user="scripted").unwrapped
    assert env.disclosure_items() == []  # before the first reset
    env.reset(seed=0)
    assert bool(env.disclosure_items()) is expect_items


def test_telepathy_item_is_the_secret_entity() -> None:
    env = gym.make("mimesis/TelepathyGym-v0", user="scripted").unwrapped
    env.reset(seed=0)
    (item,) = env.disclosure_items()
    assert revealed(item, f"It is the {env.task.title}!")
    assert not revealed(item, "Yes")


def test_default_envs_are_the_nine_with_a_user() -> None:
    assert default_envs() == ["travel", "turtle", "function", "tau", "persuade", "intention", "telepathy", "search",
                              "abcd"]  # fmt: skip
    assert customer_alias("scripted") == "oracle" and customer_alias("tiny") == "tiny"
    configs = UsersReportConfig(users=["scripted", "tiny"]).eval_configs()
    assert configs["probe"].agents == ["scripted:baseline"] and configs["probe"].users == ["scripted", "tiny"]
    assert configs["customer"].envs == ["abcd"] and configs["customer"].agents == ["oracle", "tiny"]
    assert all(config.privileged for config in configs.values())


def test_a_customer_env_is_known_by_its_table_entry_not_by_name(clean_env_table) -> None:
    """An env whose entry routes to the customer table (``summary="abcd"``) is played as a customer."""
    entry = ENV_TABLE.get("abcd")
    assert entry is not None
    register_env(entry.model_copy(update={"id": "mimesis_test/OwnCustomer-v0", "short": "own-customer"}))
    configs = UsersReportConfig(users=["scripted"], envs=["turtle", "own-customer", "abcd"]).eval_configs()
    assert configs["probe"].envs == ["turtle"]
    assert configs["customer"].envs == ["own-customer", "abcd"]
    assert is_customer_env("own-customer") and not is_customer_env("turtle")


@pytest.fixture
def abcd_dir() -> Path:
    root = SHARED_DATA / "abcd"
    if not (root / "abcd_sample.json").is_file():
        pytest.skip(f"ABCD reference data not found at {root} (expected ../shared/data/abcd)")
    return root


def test_human_reference_from_abcd_dialogues(abcd_dir: Path) -> None:
    dialogues = human_reference(abcd_dir)
    assert len(dialogues) == 3 and {d.user for d in dialogues} == {"human"}
    first = dialogues[0]  # convo 3592: every field is given right after the agent asks for it
    assert first.exchanges[1].reply == "Crystal Minh" and "name" in first.exchanges[1].prompt
    assert first_reveals(first) == {"customer_name": 1, "username": 3, "email": 4, "order_id": 5,
                                    "member_level": 6, "phone": 9}  # fmt: skip
    assert unprompted_disclosure([first]) == (0.0, 6)


def run_report(out: Path, **settings) -> dict:
    config = UsersReportConfig(
        users=["scripted"], agent=PROBE, envs=["intention", "telepathy", "abcd"], limit=1, max_turns=3, **settings
    )
    return asyncio.run(run_users_report(config, out, resume=(out / "runs").exists(), progress=False))


def test_report_lists_every_metric_per_user_and_env_and_resumes(tmp_path: Path) -> None:
    report = run_report(tmp_path / "r")
    scripted = report["users"]["scripted"]
    assert set(scripted) >= METRIC_KEYS
    assert set(scripted["envs"]) == {"intention", "telepathy", "abcd"}
    assert scripted["envs"]["abcd"]["replies"] > 0  # the scripted customer's messages
    assert scripted["envs"]["intention"]["replies"] > 0
    stored = json.loads((tmp_path / "r" / "users_report.json").read_text())
    assert stored["users"]["scripted"]["replies"] == scripted["replies"]
    markdown = (tmp_path / "r" / "users_report.md").read_text()
    assert "| unprompted disclosure |" in markdown and "| scripted |" in markdown
    lines = (tmp_path / "r" / "runs" / "probe" / "episodes.jsonl").read_text().count("\n")
    again = run_report(tmp_path / "r")  # resume: nothing re-run, same report
    assert (tmp_path / "r" / "runs" / "probe" / "episodes.jsonl").read_text().count("\n") == lines
    assert again["users"] == report["users"]


def test_scripted_users_give_the_same_report_twice(tmp_path: Path) -> None:
    assert run_report(tmp_path / "a")["users"] == run_report(tmp_path / "b")["users"]


CONTROL_REPORT_KEYS = {"horizon", "users", "config"}
CONTROL_CONFIG_KEYS = {
    "users", "agent", "envs", "limit", "trials", "max_turns", "concurrency", "agent_max_tokens", "role_max_tokens",
    "seed", "embedder", "judge", "env_args",
}  # fmt: skip
CONTROL_USER_KEYS = METRIC_KEYS | {
    "envs", "items_revealed", "item_questions", "homogeneity_pairs", "homogeneity_embedding", "judge",
    "repeated_questions", "failure_counts",
}  # fmt: skip


def test_a_control_only_report_is_the_report_as_it_was(tmp_path: Path) -> None:
    """No behaviour asked (or only control): the same runs, the same json and markdown as before
    behaviours, and nothing of them in it."""
    report = run_report(tmp_path / "default")
    explicit = run_report(tmp_path / "control", user_behaviors=["CONTROL"])
    for name in ("users_report.json", "users_report.md"):
        assert (tmp_path / "default" / name).read_text() == (tmp_path / "control" / name).read_text()
    assert set(report) == CONTROL_REPORT_KEYS and set(report["config"]) == CONTROL_CONFIG_KEYS
    assert set(report["users"]) == {"scripted"} and set(report["users"]["scripted"]) == CONTROL_USER_KEYS
    assert all(set(metrics) == CONTROL_USER_KEYS - {"envs"} for metrics in report["users"]["scripted"]["envs"].values())
    assert explicit == report
    assert sorted(path.name for path in (tmp_path / "default" / "runs").iterdir()) == ["customer", "probe"]
    assert "behaviour" not in (tmp_path / "default" / "users_report.md").read_text()


def test_each_user_is_probed_under_each_behaviour_on_the_envs_that_play_it(tmp_path: Path) -> None:
    from tests.support.hard_echo import ENV_ID

    config = UsersReportConfig(
        users=["scripted"], agent="scripted:baseline", envs=[ENV_ID, "function"], limit=2, max_turns=3,
        user_behaviors=["b13", "B4", "B13"],
    )  # fmt: skip
    assert config.user_behaviors == ["control", "B13", "B4"]
    runs = config.eval_configs()
    assert list(runs) == ["probe"] and runs["probe"].user_behaviors == ["control", "B13", "B4"]
    out = tmp_path / "r"
    report = asyncio.run(run_users_report(config, out, progress=False))
    assert list(report["users"]) == ["scripted", "scripted [B13]", "scripted [B4]"]
    assert report["user_behaviors"]["B13"] == {"envs": ["hard_echo"], "not_played": ["function"]}
    plain, dismissive = report["users"]["scripted"], report["users"]["scripted [B13]"]
    assert "behavior_enacted" not in plain and dismissive["behavior_enacted"] == 1.0  # every reply opens with a jab
    assert set(dismissive["envs"]) == {"hard_echo"} and "behavior_enacted" in report["users"]["scripted [B4]"]
    words = [column["envs"]["hard_echo"]["reply_words"]["mean"] for column in (plain, dismissive)]
    assert words[1] > words[0]  # the behaviour's effect, beside its enacted share
    markdown = (out / "users_report.md").read_text()
    assert "| metric | scripted | scripted [B13] | scripted [B4] |" in markdown
    assert "| behaviour enacted | – | 100% |" in markdown and "- B13: hard_echo (not played by function)" in markdown
    stored = json.loads((out / "users_report.json").read_text())
    assert stored["config"]["user_behaviors"] == ["control", "B13", "B4"] and stored["users"] == report["users"]
    again = asyncio.run(run_users_report(config, out, resume=True, progress=False))  # resume: the same report
    assert again["users"] == report["users"]


def cli(*args: str, path: tuple[Path, ...] = ()) -> subprocess.CompletedProcess:
    """``mimesis-gym users-report ARGS`` in a subprocess, with ``path`` (and the library) on ``PYTHONPATH``."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(map(str, (ROOT, *path)))}
    return subprocess.run(
        [sys.executable, "-m", "mimesis_gym.cli", "users-report", *args], capture_output=True, text=True, cwd=ROOT,
        env=env, timeout=120,
    )  # fmt: skip


def test_a_plugin_env_named_by_module_keeps_its_module(tmp_path: Path) -> None:
    """``--envs module:id`` is recorded with the module, as ``eval --envs`` records it: the probe run's
    records and config, and a ``--resume`` in a new process, import the plug-in again."""
    by_module = "mimesis_guess:mimesis_guess/GuessNumber-v0"
    args = ["--users", "scripted", "--envs", by_module, "--limit", "1", "--max-turns", "3", "--no-progress"]
    out = tmp_path / "out"
    for extra in ([], ["--resume"]):
        result = cli(*args, *extra, "--out", str(out), path=(ROOT / "examples" / "plugin",))
        assert result.returncode == 0, result.stderr
    probe = out / "runs" / "probe"
    assert json.loads((probe / "run.json").read_text())["config"]["envs"] == [by_module]
    records = [json.loads(line) for line in (probe / "episodes.jsonl").read_text().splitlines()]
    assert {(r["env"], r["env_id"], r["status"]) for r in records} == {("guess-number", by_module, "ok")}
    assert len(records) == 1  # the resume re-ran nothing


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--users", "scripted", "--envs", "nope"], "unknown env 'nope'"),
        (["--users", "scripted", "--limit", "0"], "--limit"),
        (["--users", "no-such-user"], "no-such-user"),
        (["--users", "scripted", "--reference", "/nonexistent-dir"], "--reference /nonexistent-dir"),
        (["--users", "scripted", "--envs", "abcd", "--env-arg", "abcd.behaviors=B7,B14"], "unknown condition 'B14'"),
        (["--users", "scripted", "--env-arg", "abcd.turn_budget=3"], "env_args names 'abcd', which is not an env"),
        (
            ["--users", "scripted", "--embedder", "hf:/nonexistent-model"],
            "--embedder: 'hf:/nonexistent-model': no model",
        ),
        (["--users", "scripted", "--judge", "scripted"], "--judge scripted: the users report's judge is an LLM"),
        (["--users", "scripted", "--judge", "no-such-judge"], "unknown user alias 'no-such-judge'"),
        (["--users", "scripted", "--user-behaviors", "control,B99"], "unknown user behavior 'B99'; known: control"),
        (
            ["--users", "scripted", "--envs", "function,search", "--user-behaviors", "B3"],
            "--user-behaviors B3: no env of this run (function, search) plays it; what each env plays: "
            "function: control; search: control",
        ),
    ],
)
def test_cli_errors_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    envs = [] if "--envs" in args else ["--envs", "intention"]
    result = cli(*args, *envs, "--out", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_cli_refuses_a_non_empty_out_without_resume(tmp_path: Path) -> None:
    (tmp_path / "x").write_text("")
    result = cli("--users", "scripted", "--out", str(tmp_path))
    assert result.returncode == 2 and "not empty" in result.stderr


def test_a_user_without_a_single_reply_is_named_and_exits_4(tmp_path: Path, fault_server) -> None:
    fault_server.default_mode = "status:400:bad request"  # answered, but every call fails (no retry)
    secret = "SENTINEL7f3a9cInTheUrl"
    url = fault_server.base_url.replace("http://", f"http://someone:{secret}@")
    out = tmp_path / "out"
    result = cli("--users", f"openai:fault-model@{url}", "--envs", "intention", "--limit", "1", "--max-turns", "2",
                 "--out", str(out), "--no-progress")  # fmt: skip
    assert result.returncode == 4, result.stderr
    shown = "openai:fault-model@" + fault_server.base_url.replace("http://", "http://***@")
    calls = len(fault_server.requests)
    assert f"no replies from user {shown}: {calls} call(s) failed (client_error {calls})" in result.stderr.splitlines()
    report = json.loads((out / "users_report.json").read_text())
    assert report["users"][shown]["replies"] == 0 and report["users"][shown]["disclosure_curve"] == [None] * 6
    assert "| disclosed by reply 1 | – |" in result.stdout  # no rate over zero replies
    assert secret not in result.stdout + result.stderr
    assert not [path for path in out.rglob("*") if path.is_file() and secret.encode() in path.read_bytes()]
