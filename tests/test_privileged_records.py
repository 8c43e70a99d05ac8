"""What ``eval --privileged`` stores in a record's ``privileged`` (docs/evaluation.md, "Work units and records")."""

from __future__ import annotations

import asyncio

from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore


def records(tmp_path, **settings):
    asyncio.run(run_eval(EvalConfig(limit=1, **settings), tmp_path, progress=False))
    return ResultsStore(tmp_path / "episodes.jsonl").read()


def test_privileged_records_hold_thoughts_hidden_task_data_and_each_turns_role_outputs(tmp_path):
    found = records(tmp_path, envs=["function", "persuade"], agents=["oracle"], privileged=True)
    assert len(found) == 2
    for record in found:
        privileged = record.privileged
        assert set(privileged) == {"thoughts", "hidden", "turns"}
        assert [turn["turn"] for turn in privileged["turns"]] == [step.turn for step in record.steps]
        assert all({"user_thought", "user_utterance", "judgements", "thoughts"} <= set(t) for t in privileged["turns"])
        assert all("hidden" not in turn for turn in privileged["turns"])
    function = next(r for r in found if r.env == "function")
    assert function.privileged["hidden"]["rule"] and function.privileged["hidden"]["answered"]
    persuade = next(r for r in found if r.env == "persuade")
    assert persuade.privileged["hidden"]["claim"]
    assert any(turn["user_utterance"] for turn in persuade.privileged["turns"])


def test_records_hold_no_privileged_data_without_the_flag(tmp_path):
    assert all(r.privileged is None for r in records(tmp_path, envs=["function"], agents=["oracle"]))
