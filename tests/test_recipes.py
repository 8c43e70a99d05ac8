"""recipes/: every paper run's config dry-runs on CPU with the paper's settings, offline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECIPES = ROOT / "recipes"
TRAINING_ENVS = "mimesis/TravelGym-v0, mimesis/TurtleGym-v0, mimesis/FunctionGym-v0, mimesis/TauGym-v0, " \
    "mimesis/PersuadeGym-v0"  # fmt: skip
AGENT_PLAN = (
    "rollouts: G 8 x 64 prompts, 16 turns, prompt 1,152 / response 8,192 tokens, engine vllm",
    "updates: mini-batch 8 prompts, micro-batch 9,344 tokens, lr 1e-06, clip 0.2/0.28, dual clip 10.0",
    "length: 100 steps",
    f"envs: {TRAINING_ENVS}",
    "policy: hf:phanviethoang1512/Qwen3-8B-Base-Agent",
    "total              33.10 GiB",  # Qwen3-8B under FSDP on 8 GPUs, from the known architecture
)
EXPECTED = {
    "userrl": (*AGENT_PLAN, "user: gpt-5.5", "algorithm: grpo (estimator grpo_multiturn"),
    "userrl_plus": (*AGENT_PLAN, "user: mimesis-9b", "algorithm: grpo (estimator grpo_multiturn"),
    "infopo": (*AGENT_PLAN, "user: mimesis-9b", "algorithm: infopo (estimator infopo"),
    "csd": (*AGENT_PLAN, "user: mimesis-9b", "csd: alpha 0.01, beta 5.0, coach corrective, pairing reaction"),
    "base_sft": (
        f"envs: {TRAINING_ENVS}",
        "policy: hf:Qwen/Qwen3-8B",
        "algorithm: sft (",
        "total              33.10 GiB",
    ),
    "simulator_abcd": (
        "envs: mimesis/ABCDBehavior-v0",
        "algorithm: foldgrpo (estimator foldgrpo",
        "rollouts: G 8 x 64 prompts, 8 turns (mimesis/ABCDBehavior-v0 ends episodes after 8 turns, its turn "
        "budget; rollout.max_turns 16), prompt 8,192 / response 16,384 tokens, engine vllm",  # 8 customer turns a row
        "updates: mini-batch 16 prompts, micro-batch 9,344 tokens, lr 8e-06, clip 0.2/0.28, dual clip 10.0",
        "length: 500 steps",
    ),
}


def dry_run(recipe: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # never the network: known architectures or "unknown"
    command = [sys.executable, "-m", "mimesis_gym.cli", "train", "--config", str(recipe), "--dry-run",
               "--accelerate-config", str(ROOT / "configs" / "accelerate" / "fsdp_8gpu.yaml")]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env={**env, "PYTHONPATH": str(ROOT)},
                          timeout=180)  # fmt: skip


def test_every_recipe_is_tested() -> None:
    assert {path.stem for path in RECIPES.glob("*.yaml")} == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recipe_dry_runs_with_the_paper_settings(name: str, tmp_path: Path) -> None:
    if name == "base_sft":  # its data comes from `mimesis-gym collect`: one collected line stands in
        (tmp_path / "data").mkdir()
        line = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "[answer] x"}]}
        (tmp_path / "data" / "base_sft.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    result = dry_run(RECIPES / f"{name}.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for line in EXPECTED[name]:
        assert line in result.stdout, f"{line!r} missing from:\n{result.stdout}"


def test_the_sft_recipe_names_its_missing_data_in_one_line(tmp_path: Path) -> None:
    result = dry_run(RECIPES / "base_sft.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "base_sft.jsonl" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
