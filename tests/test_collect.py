"""`mimesis-gym collect`: selection (top-k, threshold, status), the agent and user sides, CLI errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mimesis_gym import cli
from mimesis_gym.algorithms.learners.sft.data import SFTExample, encode_conversation
from mimesis_gym.algorithms.render import ChatRenderer
from mimesis_gym.algorithms.testing import tiny_tokenizer
from mimesis_gym.evaluation.collect import CollectError, collect, select_records
from mimesis_gym.evaluation.records import EpisodeRecord, StepRecord
from mimesis_gym.evaluation.store import serialise_record

ENV = "mimesis/TelepathyGym-v0"


def record(task: str, trial: int, score: float, *, turns: int = 1, status: str = "ok", privileged: bool = False,
           tool_calls: bool = False) -> EpisodeRecord:  # fmt: skip
    transcript: list[dict[str, Any]] = [{"role": "system", "content": "S"}, {"role": "user", "content": "Guess it."}]
    steps, turn_info = [], []
    for t in range(1, turns + 1):
        if tool_calls:
            arguments = {"choice": "answer", "content": f"g{t}"}
            call = {
                "id": f"c{t}",
                "type": "function",
                "function": {"name": "interact_with_env", "arguments": arguments},
            }
            transcript += [{"role": "assistant", "content": "", "tool_calls": [call]},
                           {"role": "tool", "tool_call_id": f"c{t}", "content": f"no {t}"}]  # fmt: skip
        else:
            transcript += [{"role": "assistant", "content": f"<think>try {t}</think>[answer] g{t}"},
                           {"role": "user", "content": f"no {t}"}]  # fmt: skip
        steps.append(StepRecord(turn=t, action_kind="answer", content=f"g{t}", valid_action=True,
                                observation=f"no {t}", reward=0.0, reward_parts={}, terminated=t == turns,
                                truncated=False, user_failure=None))  # fmt: skip
        turn_info.append({"turn": t, "user_thought": f"they guessed g{t}", "user_utterance": f"no {t}"})
    return EpisodeRecord(
        run_id="r", agent="oracle", user="scripted", judge="self", env_id=ENV, env="telepathy", task_id=task,
        trial=trial, seed=trial, key=f"oracle|scripted|{ENV}|{task}|{trial}|{trial}", status=status, steps=steps,
        n_turns=turns, episode_score=score, transcript=transcript,
        privileged={"thoughts": [], "hidden": {}, "turns": turn_info} if privileged else None,
    )  # fmt: skip


def write_run(directory: Path, records: list[EpisodeRecord]) -> Path:
    directory.mkdir(parents=True)
    (directory / "episodes.jsonl").write_text("".join(serialise_record(r) + "\n" for r in records))
    return directory


def kept(records: list[EpisodeRecord]) -> list[tuple[str, int]]:
    return [(r.task_id, r.trial) for r in records]


def test_selection_ranks_per_task_by_score_then_fewer_turns() -> None:
    records = [
        record("a", 0, 0.5), record("a", 1, 1.0, turns=3), record("a", 2, 1.0, turns=2),
        record("a", 3, 1.0, status="user_failure"), record("b", 0, 0.0), record("b", 1, 0.2),
    ]  # fmt: skip
    assert kept(select_records(records, top_k=1)) == [("a", 2), ("b", 1)]
    assert kept(select_records(records, top_k=2)) == [("a", 2), ("a", 1), ("b", 1), ("b", 0)]
    assert kept(select_records(records, min_score=0.5)) == [("a", 2), ("a", 1), ("a", 0)]
    assert kept(select_records(records, top_k=1, min_score=0.5)) == [("a", 2)]


def test_agent_side_writes_the_transcript_with_tool_calls_and_the_tool_schema(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [record("a", 0, 1.0, tool_calls=True), record("a", 1, 0.0, tool_calls=True)])
    counts = collect([run], tmp_path / "out.jsonl")  # default: the best record per task
    assert counts == {"records": 2, "written": 1, "tasks": 1, "mean_score": 1.0}
    (line,) = [json.loads(x) for x in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert line["side"] == "agent" and line["meta"]["trial"] == 0
    assert line["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"choice": "answer", "content": "g1"}
    assert line["tools"][0]["function"]["name"] == "interact_with_env"
    SFTExample.model_validate(line)


def test_user_side_trains_thought_and_utterance_turns(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [record("a", 0, 0.0, turns=2, privileged=True)])
    collect([run], tmp_path / "user.jsonl", side="user")
    example = SFTExample.model_validate_json((tmp_path / "user.jsonl").read_text())
    assert example.side == "user"
    assert [(m.role, m.content, m.train) for m in example.messages] == [
        ("user", "Guess it.", False),
        ("assistant", "[answer] g1", True),
        ("user", "<think>they guessed g1</think>no 1", True),
        ("assistant", "[answer] g2", True),
        ("user", "<think>they guessed g2</think>no 2", True),
    ]
    tokenizer = tiny_tokenizer()
    encoded = encode_conversation(example, ChatRenderer(tokenizer), "user")
    assert [tokenizer.decode(encoded.input_ids[s:e]) for s, e in encoded.spans] == [
        "<think>they guessed g1</think>no 1<|im_end|>",
        "<think>they guessed g2</think>no 2<|im_end|>",
    ]


def test_user_side_needs_privileged_records(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [record("a", 0, 1.0)])
    with pytest.raises(CollectError, match="eval --privileged"):
        collect([run], tmp_path / "user.jsonl", side="user")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mimesis_gym.cli", "collect", *args], capture_output=True, text=True)


def test_cli_collects_and_user_errors_are_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = write_run(tmp_path / "run", [record("a", 0, 1.0), record("b", 0, 0.0)])
    done = run_cli(str(run), "--out", str(tmp_path / "o.jsonl"), "--min-score", "0.5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("1 conversation(s) of 1 task(s) from 2 record(s)")
    failed = run_cli(str(tmp_path / "missing"), "--out", "x.jsonl")
    assert failed.returncode == 2
    assert failed.stderr.count("\n") == 1 and "has no episodes.jsonl" in failed.stderr, failed.stderr
    for args, message in [
        ([str(run), "--out", str(tmp_path / "u.jsonl"), "--side", "user"], "eval --privileged"),
        ([str(run), "--out", str(tmp_path / "n.jsonl"), "--min-score", "2"], "passed the selection"),
        ([str(run), "--out", str(tmp_path / "n.jsonl"), "--min-score", "nan"], "finite"),
        ([str(run), "--out", str(tmp_path / "run" / "episodes.jsonl" / "x.jsonl")], "cannot be written"),
    ]:
        assert cli.main(["collect", *args]) == 2
        stderr = capsys.readouterr().err
        assert stderr.count("\n") == 1 and message in stderr, stderr


def test_a_corrupt_line_is_named_and_skipped_only_when_asked(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", [record("a", 0, 1.0), record("b", 0, 1.0), record("c", 0, 1.0)])
    lines = (run / "episodes.jsonl").read_text().splitlines(keepends=True)
    lines[1] = '{"schema_version": 1, "run_id": "r", "key": 3\n'  # a bad line in the middle (not a torn tail)
    (run / "episodes.jsonl").write_text("".join(lines))
    refused = run_cli(str(run), "--out", str(tmp_path / "o.jsonl"))
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, refused.stderr
    assert f"{run / 'episodes.jsonl'}:2: not an episode record (not valid JSON)" in refused.stderr
    assert "delete that line" in refused.stderr and "--skip-corrupt" in refused.stderr
    assert not (tmp_path / "o.jsonl").exists()
    skipped = run_cli(str(run), "--out", str(tmp_path / "o.jsonl"), "--skip-corrupt", "--top-k", "1")
    assert skipped.returncode == 0, skipped.stderr
    assert f"skipped 1 corrupt line(s) of {run / 'episodes.jsonl'} (line 2)" in skipped.stderr
    assert skipped.stdout.startswith("2 conversation(s) of 2 task(s) from 2 record(s)")
