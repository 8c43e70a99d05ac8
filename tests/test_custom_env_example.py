"""examples/custom_env.py: a new env registered at run time, contract-checked and evaluated."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from mimesis_gym.evaluation.contract import run_checks
from tests.support.chat_models import ScriptedChatModel

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_env.py"


@pytest.fixture
def example(clean_env_table):
    """The example imported as a module, its entry registered (and removed afterwards)."""
    spec = importlib.util.spec_from_file_location("custom_env_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.register_env(module.ENTRY)
    yield module
    del sys.modules[spec.name]


def test_the_example_runs_end_to_end(tmp_path):
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), "--out", str(tmp_path)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.rstrip().endswith(f"contract: passed; results in {tmp_path}")
    assert "## Other envs (not in Avg or MR)" in out.stdout and "| Agent | Guess |" in out.stdout
    summary = json.loads((tmp_path / "summary.json").read_text())
    rows = {row["agent"]: row["scores"] for row in summary["extra"][0]["rows"]}
    assert rows == {"oracle": {"guess": 100.0}, "scripted:random": {"guess": 0.0}}
    assert summary["weights"] == {"function": 3}  # the new env stays out of Avg
    records = [json.loads(line) for line in (tmp_path / "episodes.jsonl").read_text().splitlines()]
    assert sum(r["env_id"] == "examples/GuessNumber-v0" for r in records) == 6


def test_the_scripted_host_answers_and_the_contract_holds(example):
    env = gym.make("examples/GuessNumber-v0", split="demo")
    _, info = env.reset(seed=0)
    secret = example.number_pack().get(info["task_id"]).secret
    assert [env.step(guess)[0] for guess in ("[answer] 0", "[answer] 101", "[answer] lots")] == [
        "Higher.",
        "Lower.",
        "Please answer with a whole number.",
    ]
    obs, reward, terminated, _, info = env.step(f"[answer] {secret}")
    assert (obs, reward, terminated, info["episode_score"]) == ("Correct!", 1.0, True, 1.0)
    env.close()
    assert all(result.ok for result in run_checks([example.ENTRY.id])), run_checks([example.ENTRY.id])


def test_an_llm_user_plays_the_host_and_a_bad_reply_falls_back(example):
    model = ScriptedChatModel(['{"reply": "lower"}', '{"reply": "maybe"}'])
    env = gym.make("examples/GuessNumber-v0", user=model)
    env.reset(seed=0)
    assert env.step("[answer] 50")[0] == "Lower."
    assert "You thought of the number" in model.calls[0]["messages"][0]["content"]
    obs, reward, _, _, info = env.step("[answer] 40")
    assert obs.startswith("The user did not answer clearly") and reward == 0.0
    assert info["user_failure"] == "host:invalid_value"
    env.close()
