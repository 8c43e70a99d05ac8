"""The scorecard against humans: the replay env, the index's composition, the protocol over loopback
(a copying user scores the ceiling, a constant user scores low), resume and the command line."""

from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import gymnasium as gym
import pytest

import mimesis_gym  # noqa: F401  (registers the envs)
from mimesis_gym.agents.oracle import run_oracle_episode
from mimesis_gym.core.errors import EndpointUnavailableError
from mimesis_gym.corpora import load_corpus
from mimesis_gym.envs.replay.env import ENDED_TEXT, OPENING_OTHER_FIRST
from mimesis_gym.envs.replay.roles import read_end
from mimesis_gym.evaluation.humanlike.scorecard import (
    CEILING,
    FLOOR,
    TERMS,
    ScorecardConfig,
    UserSample,
    dice,
    human_sample,
    ks_distance,
    reference_of,
    run_scorecard,
    score_samples,
    z_term,
)
from tests.support.replay_server import ReplayUserServer
from tests.test_users_report import cli

ROOT = Path(__file__).resolve().parents[1]
HUMANS = ROOT.parent / "shared" / "data" / "humans"

# ------------------------------------------------------------------------------------------ the env


def replay(task_id: str, **kwargs):
    env = gym.make("mimesis/HumanReplay-v0", privileged=True, **kwargs).unwrapped
    score, rewards, info = run_oracle_episode(env, seed=0, options={"task_id": task_id})
    return env, score, rewards, info["privileged"]["hidden"]["twins"]


def test_the_oracle_replays_the_real_replies_and_every_user_turn_gets_a_twin() -> None:
    env, score, rewards, twins = replay("demo/demo-1")
    task = env.task
    humans = [turn.text for turn in task.turns if turn.role == "user"]
    assert [twin["position"] for twin in twins] == [1, 2, 3]  # the human ended with a user turn: no end probe
    assert [twin["human"] for twin in twins] == humans
    assert score == 0.0 and rewards == [0.0, 0.0]  # a measurement: no reward
    # the transcript the agent saw is the real conversation
    assert [m["content"] for m in env.transcript if m["role"] == "user"] == humans
    assert twins[0]["simulated"].startswith("Hi.") and twins[1]["simulated"] == "Thanks, that helps."


def test_an_assistant_first_conversation_opens_with_a_note_and_ends_with_the_end_probe() -> None:
    env = gym.make("mimesis/HumanReplay-v0", privileged=True).unwrapped
    obs, _ = env.reset(seed=0, options={"task_id": "demo/demo-2"})
    assert obs == OPENING_OTHER_FIRST
    _, _, info = run_oracle_episode(env, seed=0, options={"task_id": "demo/demo-2"})
    twins = info["privileged"]["hidden"]["twins"]
    assert twins[-1]["human"] is None and twins[-1]["human_ended"] is True
    assert env.transcript[-1]["content"] == ENDED_TEXT
    assert [twin["human_ended"] for twin in twins[:-1]] == [False] * (len(twins) - 1)


def test_finish_stops_the_replay_and_a_malformed_action_costs_a_turn_without_a_user_call() -> None:
    env = gym.make("mimesis/HumanReplay-v0", privileged=True).unwrapped
    env.reset(seed=0, options={"task_id": "demo/demo-1"})
    _, _, terminated, _, info = env.step("no grammar here")
    assert not terminated and not info["valid_action"] and len(info["privileged"]["hidden"]["twins"]) == 1
    _, _, terminated, _, info = env.step("[finish]")
    assert terminated and len(info["privileged"]["hidden"]["twins"]) == 1


def test_the_user_sees_the_most_recent_real_turns_that_fit_history_chars() -> None:
    env = gym.make("mimesis/HumanReplay-v0", history_chars=60).unwrapped
    env.reset(seed=0, options={"task_id": "demo/demo-1"})
    history = env._history(env.task, 4)
    texts = [turn.text for turn in env.task.turns[:4]]
    assert [text for _, text in history] == texts[-len(history) :] or history[0][1].startswith("…")
    assert sum(len(text) for _, text in history) <= 61
    assert [speaker for speaker, _ in history][-1] == "other"  # the real reply just before the asked turn


def test_read_end_takes_either_marker_out() -> None:
    assert read_end("thanks ###STOP###") == ("thanks", True)
    assert read_end("<|endconversation|>") == ("", True)
    assert read_end("  go on  ") == ("go on", False)


def test_humans_pack_needs_a_folder_and_names_the_fix() -> None:
    with pytest.raises(Exception, match="data_dir=<the folder that holds the corpora>"):
        gym.make("mimesis/HumanReplay-v0", pack="humans")


# ------------------------------------------------------------------------------------------ terms


def test_terms_by_hand() -> None:
    assert z_term(0.0) == 100.0
    assert z_term(1.0) == pytest.approx(31.731, abs=1e-3) and z_term(-2.0) == pytest.approx(4.550, abs=1e-3)
    assert dice(2.0, 6.0) == pytest.approx(50.0) and dice(0.0, 0.0) == 100.0 and dice(None, 1.0) is None
    assert ks_distance([1, 2, 3], [1, 2, 3]) == 0.0
    assert ks_distance([1, 2], [3, 4]) == 1.0
    assert ks_distance([1, 2, 3, 4], [3, 4, 5, 6]) == pytest.approx(0.5)


def _conversations(tmp_path: Path) -> list:
    """Eight small hand-made conversations in the generic JSONL shape, both halves filled."""
    lines = []
    for index in range(8):
        turns = [
            {"role": "user", "content": f"hi, I need help planning trip number {index} to the coast"},
            {"role": "assistant", "content": f"Sure! Where would trip {index} start, and for how many days?"},
            {"role": "user", "content": "from home, three days maybe. not sure yet" if index % 2 else "ok thanks!"},
            {"role": "assistant", "content": "Great, here is a plan with three stops along the coast."},
        ]
        lines.append(json.dumps({"id": f"c{index}", "goal": f"Plan trip {index} to the coast.", "messages": turns}))
    path = tmp_path / "trips.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loaded = load_corpus(f"jsonl:{path}").conversations
    assert {c.split for c in loaded} == {"dev", "test"}
    return loaded


def test_the_index_is_the_mean_of_the_families_computed_each_the_mean_of_its_terms(tmp_path: Path) -> None:
    conversations = _conversations(tmp_path)
    dev = [c for c in conversations if c.split == "dev"]
    test = [c for c in conversations if c.split == "test"]
    reference = reference_of([human_sample(c) for c in dev], "words")
    humans = score_samples([human_sample(c) for c in test], reference, "words")
    assert set(humans["terms"]) == set(TERMS) and humans["terms"]["turing"] is None  # no judge
    families = humans["families"]
    assert families["turing"] is None
    assert families["behaviour"] == pytest.approx(sum(humans["terms"][d] for d in ("D1", "D2", "D3", "D4")) / 4)
    present = [value for value in families.values() if value is not None]
    assert humans["index"] == pytest.approx(sum(present) / len(present))
    assert humans["parts"]["termination_f1"] == 1.0  # humans end where they ended
    with_judge = score_samples([human_sample(c) for c in test], reference, "words", turing=0.75)
    assert with_judge["terms"]["turing"] == pytest.approx(50.0)  # 75 % picked: half way to telling them apart
    assert with_judge["index"] == pytest.approx((sum(present) + 50.0) / (len(present) + 1))
    constant = [UserSample(c, ["ok"] * len(c.user_texts), first="ok", endings=[(False, False)]) for c in test]
    assert score_samples(constant, reference, "words")["index"] < humans["index"] - 20
    assert score_samples(constant, None, "words")["index"] is None  # no dev half: parts only


# ------------------------------------------------------------------------------------------ the protocol


def run(config: ScorecardConfig, out: Path, *, resume: bool = False) -> dict:
    return asyncio.run(run_scorecard(config, out, resume=resume, progress=False))


def _config(url: str, humans: Path, sources: list[str], **extra) -> ScorecardConfig:
    return ScorecardConfig(
        users=[f"openai:replay-user@{url}"], humans_dir=str(humans), sources=sources, history_chars=10**7, **extra
    )


def test_a_user_that_copies_the_humans_scores_the_ceiling_and_a_constant_user_scores_low(tmp_path: Path) -> None:
    conversations = _conversations(tmp_path)
    source = f"jsonl:{tmp_path / 'trips.jsonl'}"
    with ReplayUserServer(conversations) as server:
        report = run(_config(server.url, tmp_path, [source]), tmp_path / "copy")
    assert server.unknown == 0 and server.calls > 0
    user = f"openai:replay-user@{server.url}"
    table = report["sources"]["trips"]
    copy, ceiling, floor = table[user], table[CEILING], table[FLOOR]
    assert copy["terms"] == ceiling["terms"] and copy["index"] == ceiling["index"]
    assert copy["parts"]["termination_f1"] == 1.0
    assert floor["index"] < ceiling["index"]
    with ReplayUserServer(conversations, mode="constant", constant="ok") as server:
        low = run(_config(server.url, tmp_path, [source]), tmp_path / "constant")
    constant = low["sources"]["trips"][f"openai:replay-user@{server.url}"]
    assert constant["index"] < ceiling["index"] - 20
    assert constant["parts"]["termination_f1"] in (0.0, None)  # it never ends


def test_resume_replays_nothing_twice_and_the_report_files_are_written(tmp_path: Path) -> None:
    conversations = _conversations(tmp_path)
    source = f"jsonl:{tmp_path / 'trips.jsonl'}"
    out = tmp_path / "out"
    with ReplayUserServer(conversations) as server:
        first = run(_config(server.url, tmp_path, [source]), out)
        calls = server.calls
        again = run(_config(server.url, tmp_path, [source]), out, resume=True)
        assert server.calls == calls
    assert again["sources"] == first["sources"]
    for name in ("users_report.json", "users_report.md", "report.html"):
        assert (out / name).is_file(), name
    text = (out / "users_report.md").read_text(encoding="utf-8")
    assert "**ceiling**" in text and "floor: scripted" in text and "## trips" in text
    assert len(list((out / "plots").glob("humans_D*.png"))) == 4


@pytest.mark.skipif(not HUMANS.is_dir(), reason="../shared/data/humans absent: the shipped corpora are not here")
def test_on_the_shipped_corpora_the_copying_user_equals_the_ceiling_on_every_source(tmp_path: Path) -> None:
    sources = ["oasst1", "simulatorarena-doc", "simulatorarena-math", "thoughttrace", "chitchat"]
    conversations = [c for name in sources for c in load_corpus(name, HUMANS).conversations]
    with ReplayUserServer(conversations) as server:
        report = run(_config(server.url, HUMANS, sources, limit=2, max_turns=4), tmp_path / "out")
    assert server.unknown == 0
    user = f"openai:replay-user@{server.url}"
    for source in sources:
        table = report["sources"][source]
        assert table[user]["terms"] == table[CEILING]["terms"], source
        assert table[user]["index"] is not None and not math.isnan(table[user]["index"])
    assert report["overall"][user]["index"] == report["overall"][CEILING]["index"]


# ------------------------------------------------------------------------------------------ the command line


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--humans", "/nonexistent-dir"], "--humans /nonexistent-dir is not a directory"),
        (["--humans", ".", "--sources", "nope"], "unknown corpus 'nope'"),
        (["--humans", ".", "--envs", "turtle"], "--envs belongs to the env probe"),
        (["--humans", ".", "--judge", "scripted"], "--judge scripted: the Turing-test judge is an LLM"),
        (["--humans", ".", "--tokenizer", "bpe"], "tokenizer"),
        (["--sources", "oasst1"], "add --humans DIR"),
    ],
)
def test_cli_errors_are_one_line_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    result = cli("--users", "scripted", *args, "--out", str(tmp_path / "out"), "--no-progress")
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_cli_scores_a_corpus_and_prints_the_table(tmp_path: Path) -> None:
    _conversations(tmp_path)
    result = cli("--users", "scripted", "--humans", str(tmp_path), "--sources", f"jsonl:{tmp_path / 'trips.jsonl'}",
                 "--out", str(tmp_path / "out"), "--no-progress")  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "| floor: scripted (template) |" in result.stdout and "**ceiling**" in result.stdout


def test_the_turing_judge_adds_its_pick_rate_and_a_dead_one_stops_before_the_replay(
    tmp_path: Path, fault_server
) -> None:
    conversations = _conversations(tmp_path)
    source = f"jsonl:{tmp_path / 'trips.jsonl'}"
    fault_server.default_mode = 'ok:{"human": "A"}'  # always names A: right where the seeded order put the human
    judge = f"openai:fault-model@{fault_server.base_url}"
    with ReplayUserServer(conversations, mode="constant", constant="ok") as server:
        report = run(_config(server.url, tmp_path, [source], judge=judge), tmp_path / "judged")
    user = f"openai:replay-user@{server.url}"
    result = report["turing"][user]["trips"]
    assert (
        result["judged"] > 0
        and result["judged"] + sum(result["failures"].values()) + result["identical"] == result["items"]
    )
    entry = report["sources"]["trips"][user]
    assert entry["parts"]["turing_pick_rate"] == result["pick_rate"]
    assert entry["terms"]["turing"] == pytest.approx(100.0 * min(1.0, 2.0 * (1.0 - result["pick_rate"])))
    assert entry["families"]["turing"] == entry["terms"]["turing"]
    dead = "openai:m@http://127.0.0.1:9/v1"  # nothing listens on the discard port
    with ReplayUserServer(conversations) as server, pytest.raises(EndpointUnavailableError, match="judge"):
        run(_config(server.url, tmp_path, [source], judge=dead), tmp_path / "dead")
    assert server.calls == 0  # the judge was probed before the replay
