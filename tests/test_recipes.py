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
PRECISION = "precision on GPUs: parameters float32 (model.dtype=float32), compute bfloat16 (run.dtype=auto)"
AGENT_PLAN = (
    "rollouts: G 8 x 64 prompts, 16 turns, prompt 1,152 / response 8,192 tokens, engine vllm",
    "updates: mini-batch 8 prompts, micro-batch 9,344 tokens, lr 1e-06, clip 0.2/0.28, dual clip 10.0",
    "length: 100 steps",
    f"envs: {TRAINING_ENVS}",
    "policy: hf:phanviethoang1512/Qwen3-8B-Base-Agent",
    "total              33.10 GiB",  # Qwen3-8B under FSDP on 8 GPUs, from the known architecture
    PRECISION,
)
HARD_USERS = (
    "user behaviours (one condition drawn per group): control 50%, B3 12.5%, B9 12.5%, B12 12.5%, B13 12.5% on "
    "mimesis/TravelGym-v0, mimesis/TurtleGym-v0, mimesis/TauGym-v0, mimesis/PersuadeGym-v0; "
    "control 100% on mimesis/FunctionGym-v0"
)
EXPECTED = {
    "userrl": (*AGENT_PLAN, "user: gpt-5.5", "algorithm: grpo (estimator grpo_multiturn"),
    "agent_hard_users": (*AGENT_PLAN, "user: mimesis-9b", "algorithm: grpo (estimator grpo_multiturn", HARD_USERS),
    "userrl_plus": (*AGENT_PLAN, "user: mimesis-9b", "algorithm: grpo (estimator grpo_multiturn"),
    "infopo": (*AGENT_PLAN, "user: mimesis-9b", "algorithm: infopo (estimator infopo"),
    "csd": (*AGENT_PLAN, "user: mimesis-9b", "csd: alpha 0.01, beta 5.0, coach corrective, pairing reaction"),
    "base_sft": (
        f"envs: {TRAINING_ENVS}",
        "policy: hf:Qwen/Qwen3-8B",
        "algorithm: sft (",
        "total              33.10 GiB",
        PRECISION,
    ),
    "simulator_midtrain": (
        "envs: mimesis/HumanReplay-v0",
        "policy: hf:Qwen/Qwen3-8B",
        "algorithm: sft (",
        "lr 3e-05",
        "length: 2000 steps",
        PRECISION,
    ),
    "simulator_thoughttrace": (
        "envs: mimesis/HumanReplay-v0",
        "algorithm: sft (",
        "lr 1e-07",
        "length: 135 steps",
        PRECISION,
    ),
    "simulator_abcd": (
        "envs: mimesis/ABCDBehavior-v0",
        "algorithm: foldgrpo (estimator foldgrpo",
        "rollouts: G 8 x 64 prompts, 8 turns (mimesis/ABCDBehavior-v0 ends episodes after 8 turns, its turn "
        "budget; rollout.max_turns 16), prompt 8,192 / response 16,384 tokens, engine vllm",  # 8 customer turns a row
        "updates: mini-batch 16 prompts, micro-batch 9,344 tokens, lr 8e-06, clip 0.2/0.28, dual clip 10.0",
        "length: 500 steps",
        PRECISION,
    ),
}


def dry_run(recipe: Path, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}  # never the network: known architectures or "unknown"
    command = [sys.executable, "-m", "mimesis_gym.cli", "train", "--config", str(recipe), "--dry-run",
               "--accelerate-config", str(ROOT / "configs" / "accelerate" / "fsdp_8gpu.yaml")]  # fmt: skip
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd, env={**env, "PYTHONPATH": str(ROOT)},
                          timeout=180)  # fmt: skip


def write_user_side_data(root: Path, style: str) -> None:
    """``data/simulator_<style>.jsonl`` under ``root``, written by ``sft-data`` from a small corpus whose
    ids 1 and 2 fall in the ``dev`` half (``split_of("own", …)``)."""
    corpus = root / "own.jsonl"
    lines = [
        {"id": str(i), "goal": "Plan a trip.", "messages": [
            {"role": "user", "content": "help me plan a trip", "reason": "I am going away"},
            {"role": "assistant", "content": "Where to?"},
        ]}
        for i in (1, 2)
    ]  # fmt: skip
    corpus.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    (root / "data").mkdir(exist_ok=True)
    command = [sys.executable, "-m", "mimesis_gym.cli", "sft-data", "--sources", f"jsonl:{corpus}", "--style", style,
               "--out", str(root / "data" / f"simulator_{style}.jsonl")]  # fmt: skip
    subprocess.run(command, check=True, capture_output=True, cwd=root, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_every_recipe_is_tested() -> None:
    assert {path.stem for path in RECIPES.glob("*.yaml")} == set(EXPECTED)


def unplayed_behaviours(recipe: str) -> list[tuple[str, str]]:
    """The ``(env id, behaviour)`` pairs of a recipe's ``user_behavior`` mixtures that their env does not play."""
    import yaml

    from mimesis_gym.envs.recipe import env_creator

    data = yaml.safe_load((RECIPES / f"{recipe}.yaml").read_text(encoding="utf-8"))
    mixtures = {item["id"]: item["kwargs"]["user_behavior"] for item in data["envs"] if isinstance(item, dict)}
    return [
        (env_id, behavior)
        for env_id, mixture in mixtures.items()
        for behavior in mixture
        if behavior != "control" and behavior not in env_creator(env_id).user_behaviors.applicable
    ]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_recipe_dry_runs_with_the_paper_settings(name: str, tmp_path: Path) -> None:
    if name == "base_sft":  # its data comes from `mimesis-gym collect`: one collected line stands in
        (tmp_path / "data").mkdir()
        line = {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "[answer] x"}]}
        (tmp_path / "data" / "base_sft.jsonl").write_text(json.dumps(line) + "\n", encoding="utf-8")
    if name.startswith("simulator_") and name != "simulator_abcd":  # written by `mimesis-gym sft-data`
        write_user_side_data(tmp_path, name.removeprefix("simulator_"))
    result = dry_run(RECIPES / f"{name}.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    for line in EXPECTED[name]:
        assert line in result.stdout, f"{line!r} missing from:\n{result.stdout}"


def test_the_hard_users_recipe_names_only_behaviours_its_envs_play() -> None:
    """Read from the envs' own declarations (``user_behaviors``): an env that stops playing one of the
    mixture's behaviours fails here by name, before the dry run's one-line refusal above."""
    assert not unplayed_behaviours("agent_hard_users"), "recipes/agent_hard_users.yaml names unplayed behaviours"


def test_the_sft_recipe_names_its_missing_data_in_one_line(tmp_path: Path) -> None:
    result = dry_run(RECIPES / "base_sft.yaml", cwd=tmp_path)
    assert result.returncode == 2 and "base_sft.jsonl" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def comments(recipe: str) -> tuple[str, dict[str, str]]:
    """A recipe's header (its leading comment block) and each setting's trailing comment by key."""
    lines = (RECIPES / f"{recipe}.yaml").read_text(encoding="utf-8").splitlines()
    header = "\n".join(line for line in lines[: next(i for i, x in enumerate(lines) if x and x[0] != "#")])
    by_key = {}
    for line in lines:
        setting, _, comment = line.partition("#")
        if ":" in setting and not line.startswith("#"):
            by_key.setdefault(setting.split(":")[0].strip(), comment.strip())
    return header, by_key


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_recipe_says_its_precision_where_a_reader_sees_it(name: str) -> None:
    """fp32 master parameters with bf16 compute, not Table 13's bf16: in the header and at the dtype lines."""
    import yaml

    data = yaml.safe_load((RECIPES / f"{name}.yaml").read_text(encoding="utf-8"))
    assert (data["model"]["dtype"], data["run"]["dtype"]) == ("float32", "auto")
    header, by_key = comments(name)
    assert "fp32 master parameters" in header and "bf16 compute" in header and "model.dtype=bfloat16" in header
    assert "fp32 master parameters" in by_key["dtype"]


def test_citations_name_the_source_that_states_the_value() -> None:
    """Table 13 gives no turn cap (UserRL and the release do); Table 7 gives no batch or lengths for the simulator."""
    for name in ("userrl", "userrl_plus", "infopo", "csd"):
        turns = comments(name)[1]["max_turns"]
        assert "UserRL" in turns and "Table 13 does not state it" in turns, (name, turns)
    simulator = comments("simulator_abcd")[1]
    for key in ("group_size", "prompts_per_batch", "max_prompt_tokens", "max_response_tokens"):
        assert simulator[key] == "(the released simulator code; not in Table 7)", key
