"""Behaviour lock of the learners: two ``Trainer.step()``s per scenario, replayed from recorded rollouts.

Each scenario trains the tiny random model on KeywordEcho for two steps on fixed seeds and one torch
thread. The steps' rollouts are not sampled here: they are replayed from
``tests/data/learner_rollouts.json.gz`` (token ids, masks, spans, rewards, sampler log-probs, recorded
once with :class:`~mimesis_gym.algorithms.testing.RecordingCollector`) through
:class:`~mimesis_gym.algorithms.testing.ReplayCollector`, so what is compared is the learners' math
— old log-probs, advantages, losses, clipping, gates, the learners' passes, metrics, the forward
counters and the size of the weight change — on inputs that no processor's rounding decides. The
expected numbers are ``tests/data/learner_golden.json``; the tolerances below were measured across
kernel paths and thread counts (docs/testing.md, "Learner golden tests"). Sampling is tested apart
(``test_the_same_seed_samples_the_same_rollouts_on_one_machine`` here, tests/test_learn_engine.py).

A change that alters what any learner computes fails here. Regenerate both files deliberately (and
say why in the commit) with::

    PYTHONPATH=$PWD python -m tests.test_learner_golden --write
"""

from __future__ import annotations

import functools
import gzip
import json
import math
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.config import TrainerConfig  # noqa: E402
from mimesis_gym.algorithms.testing import (  # noqa: E402
    ENV_ID,
    RecordingCollector,
    ReplayCollector,
    tiny_random_model,
)
from mimesis_gym.algorithms.trainer import Trainer  # noqa: E402
from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: E402, F401

DATA = Path(__file__).parent / "data"
GOLDEN = DATA / "learner_golden.json"
ROLLOUTS = DATA / "learner_rollouts.json.gz"
# Every float must be within max(RELATIVE × |expected|, ABSOLUTE). Measured on replayed rollouts across
# ATen's default/AVX2/AVX-512 kernels (MKL and oneDNN capped likewise) and 1 or 2 threads: relative
# spread ≤ 5.3e-5 where a number is above 3e-6, absolute spread ≤ 2.9e-6 on the numbers that are mostly
# rounding (rollout/logprob_gap, ppo_kl, csd/loss on a near-zero Δ); a margin of 10-20× on both
# (docs/testing.md, "Learner golden tests").
RELATIVE = 1e-3
ABSOLUTE = 3e-5

PARITY = [(ENV_ID, {"reward_rule": "parity"})]
BASE = [
    "rollout.group_size=4", "rollout.prompts_per_batch=4", "update.mini_batch_prompts=2", "optim.lr=1e-4",
    "run.total_steps=2", "run.eval_every=0", "run.save_every=0", "run.progress=false",
    "csd.coach.kind=scripted", "csd.coach.callable=mimesis_gym.algorithms.testing:keyword_echo_coach",
]  # fmt: skip
SMALL = ["rollout.group_size=2", "rollout.prompts_per_batch=2"]
# the CSD coach the numbers were recorded with (the defaults before the paper's corrective/reaction coach);
# KeywordEcho's scripted coach writes a fixed note, so the paper's coach gives the same numbers here
RECORDED_COACH = ["csd.coach.style=prospective", "csd.pairing=answered"]

SCENARIOS: dict[str, dict[str, Any]] = {
    "grpo": {"algorithm": "grpo"},
    "grpo-one-minibatch": {"algorithm": "grpo", "overrides": ["update.mini_batch_prompts=4"]},
    "grpo-no-reward": {"algorithm": "grpo", "envs": [(ENV_ID, {"reward_rule": "keyword"})]},
    "grpo-outcome": {"algorithm": "grpo-outcome"},
    "foldgrpo": {"algorithm": "foldgrpo"},
    "infopo": {"algorithm": "infopo"},
    "infopo-official": {"preset": "infopo-official", "algorithm": None, "overrides": SMALL},
    "csd": {"algorithm": "csd", "overrides": RECORDED_COACH},
    "csd-release": {
        "preset": "mimesis-release",
        "algorithm": "csd",
        "overrides": ["csd.placebo_min=2", "csd.estimator=reinforce", "update.micro_batch_tokens=64"],
    },
    "csd-warmup": {"algorithm": "csd", "overrides": [*SMALL, *RECORDED_COACH, "csd.warmup_steps=1"]},
    "grpo-options": {
        "algorithm": "grpo",
        "overrides": [
            *SMALL,
            "loss.kl_coef=0.001",
            "loss.entropy_coef=0.001",
            "loss.rollout_is=token",
            "loss.token_mean_scope=microbatch",
            "loss.loss_agg=seq-mean-token-mean",
            "rollout.context_mode=per_turn",
            "update.packing=off",
            "optim.schedule=cosine",
            "optim.warmup_steps=1",
            "update.micro_batch_tokens=64",
        ],
    },
    "grpo-sampler": {"algorithm": "grpo", "overrides": [*SMALL, "loss.old_logprob_source=sampler"]},
}


@functools.cache
def recorded_rollouts() -> dict[str, list[list[dict[str, Any]]]]:
    """Every scenario's recorded ``collect`` calls, read once per session (treat them as read-only)."""
    with gzip.open(ROLLOUTS, "rt", encoding="utf-8") as handle:
        return json.load(handle)


def load_rollouts(name: str) -> list[list[dict[str, Any]]]:
    """The recorded ``collect`` calls of scenario ``name`` (one per step)."""
    recorded = recorded_rollouts()
    assert name in recorded, f"no recorded rollouts for {name!r}: regenerate {ROLLOUTS.name} (see the module docstring)"
    return recorded[name]


def run_scenario(
    name: str, output_dir: Path, rollouts: list[list[dict[str, Any]]] | None = None
) -> tuple[dict[str, Any], list[list[dict[str, Any]]]]:
    """Two steps of scenario ``name``: the metrics of each step, the counters and the weight change.

    With ``rollouts`` the steps replay them (nothing is sampled); without, the steps sample and the
    second value is what they collected (the recording). Returns ``(result, collect calls)``.
    """
    spec = SCENARIOS[name]
    base = TrainerConfig.preset(spec.get("preset", "cpu-tiny"))
    if "preset" in spec:  # the named preset's sizes are far too large for a test: take cpu-tiny's
        tiny = TrainerConfig.preset("cpu-tiny")
        base = base.model_copy(update={"run": tiny.run, "update": tiny.update})
        base = base.model_copy(update={"rollout": base.rollout.model_copy(update={"max_tokens_per_turn": 16})})
    config = base.with_overrides([*BASE, f"run.output_dir={output_dir}", *spec.get("overrides", [])])
    model, tokenizer = tiny_random_model(seed=0)
    before = [p.detach().clone() for p in model.parameters()]
    trainer = Trainer(spec.get("envs", PARITY), (model, tokenizer), algorithm=spec["algorithm"], config=config)
    if rollouts is None:
        trainer.collector = collector = RecordingCollector(trainer.collector)
    else:
        trainer.collector = collector = ReplayCollector(rollouts)
    steps = []
    for _ in range(2):
        metrics = trainer.step()
        steps.append({k: v for k, v in sorted(metrics.items()) if not k.startswith("time/")})
    change = math.sqrt(
        sum(float(((p.detach() - b) ** 2).sum()) for p, b in zip(model.parameters(), before, strict=True))
    )
    result = {"steps": steps, "counters": dict(sorted(trainer.counters.items())), "weight_change": change}
    return result, collector.calls


def replay_scenario(name: str, output_dir: Path) -> dict[str, Any]:
    """Scenario ``name`` on its recorded rollouts."""
    return run_scenario(name, output_dir, load_rollouts(name))[0]


def assert_matches(actual: Any, expected: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and sorted(actual) == sorted(expected), (
            f"{where}: keys differ: extra {sorted(set(actual) - set(expected))}, "
            f"missing {sorted(set(expected) - set(actual))}"
        )
        for key in expected:
            assert_matches(actual[key], expected[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), f"{where}: length differs"
        for index, (a, e) in enumerate(zip(actual, expected, strict=True)):
            assert_matches(a, e, f"{where}[{index}]")
    elif isinstance(expected, float):
        assert actual == pytest.approx(expected, rel=RELATIVE, abs=ABSOLUTE), f"{where}: {actual!r} != {expected!r}"
    else:
        assert actual == expected, f"{where}: {actual!r} != {expected!r}"


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_two_steps_on_recorded_rollouts_match_the_recorded_numbers(tmp_path, name):
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert name in golden, f"no golden numbers for {name!r}: regenerate {GOLDEN.name} (see the module docstring)"
    assert_matches(replay_scenario(name, tmp_path), golden[name], name)


def test_the_golden_files_cover_every_scenario_and_move_the_weights():
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    rollouts = recorded_rollouts()
    assert sorted(golden) == sorted(SCENARIOS) == sorted(rollouts)
    assert all(len(calls) == 2 and all(calls) for calls in rollouts.values())  # two steps, episodes in each
    assert all(entry["weight_change"] > 0 for entry in golden.values())
    csd = golden["csd"]["steps"][1]
    assert csd["csd/coached_token_frac"] > 0 and csd["loss/total"] != csd["loss/pg"]
    assert golden["csd-release"]["steps"][1]["csd/placebo_frac"] > 0
    assert (
        "csd/gate_mean" not in golden["csd-warmup"]["steps"][0] and "csd/gate_mean" in golden["csd-warmup"]["steps"][1]
    )
    assert golden["infopo"]["counters"]["counterfactual_forwards"] > 0
    assert golden["grpo-no-reward"]["counters"].get("student_forwards", 0) == 0
    # mixed rewards in every reward-driven scenario: the advantages are not all zero
    assert all(entry["steps"][0]["adv/std"] > 0 for name, entry in golden.items() if name != "grpo-no-reward")


def test_a_replay_refuses_episodes_the_trainer_did_not_ask_for(tmp_path):
    from mimesis_gym.algorithms.testing import ReplayMismatchError

    rollouts = load_rollouts("grpo")
    with pytest.raises(ReplayMismatchError, match="only 1 were recorded"):
        run_scenario("grpo", tmp_path / "short", rollouts[:1])
    swapped = [rollouts[1], rollouts[0]]  # step 2's episodes offered to step 1
    with pytest.raises(ReplayMismatchError, match="was not requested"):
        run_scenario("grpo", tmp_path / "swapped", swapped)


def test_the_same_seed_samples_the_same_rollouts_on_one_machine(tmp_path):
    """Sampling, apart from the math: two runs on one machine collect identical episodes and numbers.

    (Across processors the sampled ids may differ: fp32 kernels round differently, and a sampled token
    follows from its logits. That is why the golden tests above replay recorded rollouts.)
    """
    first, first_calls = run_scenario("grpo", tmp_path / "a")
    second, second_calls = run_scenario("grpo", tmp_path / "b")
    assert first_calls == second_calls
    assert first == second
    # and the episodes the sampler wrote carry what the replay needs
    episode = first_calls[0][0]
    assert episode["segments"] and episode["turns"] and episode["turns"][0]["sampler_logprobs"]


def write_golden() -> None:
    """Sample every scenario's rollouts on this machine and write them and the numbers computed from them."""
    torch.set_num_threads(1)
    results, rollouts = {}, {}
    with tempfile.TemporaryDirectory() as directory:
        for name in sorted(SCENARIOS):
            results[name], rollouts[name] = run_scenario(name, Path(directory) / name)
            print(f"{name}: {len(results[name]['steps'][0])} metrics", file=sys.stderr)
    DATA.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    with gzip.GzipFile(ROLLOUTS, "wb", mtime=0) as handle:  # mtime 0: the same rollouts, the same bytes
        handle.write(json.dumps(rollouts, sort_keys=True, separators=(",", ":")).encode("utf-8"))


def deviations(actual: Any, expected: Any, where: str = "") -> list[tuple[float, float, float, str]]:
    """``(share of the tolerance used, relative, absolute, where)`` of every float that differs.

    A difference in anything but a float (a counter, a key) raises: those must be equal everywhere.
    """
    if isinstance(expected, dict):
        if sorted(actual) != sorted(expected):
            raise AssertionError(f"{where}: keys differ")
        return [d for key in expected for d in deviations(actual[key], expected[key], f"{where}.{key}")]
    if isinstance(expected, list):
        pairs = enumerate(zip(actual, expected, strict=True))
        return [d for i, (a, e) in pairs for d in deviations(a, e, f"{where}[{i}]")]
    if isinstance(expected, float):
        gap = abs(actual - expected)
        used = gap / max(RELATIVE * abs(expected), ABSOLUTE)
        return [(used, gap / abs(expected) if expected else math.inf, gap, where)] if gap else []
    if actual != expected:
        raise AssertionError(f"{where}: {actual!r} != {expected!r}")
    return []


def print_spread(threads: int) -> None:
    """Replay every scenario on ``threads`` torch threads; print how far each number moved from the golden one.

    Run it under other kernel paths (``ATEN_CPU_CAPABILITY``, ``MKL_ENABLE_INSTRUCTIONS``,
    ``ONEDNN_MAX_CPU_ISA``) to measure what the tolerances must absorb (docs/testing.md). The first
    column is the share of the tolerance a number used (1.0 would fail).
    """
    torch.set_num_threads(threads)
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))
    found = []
    with tempfile.TemporaryDirectory() as directory:
        for name in sorted(SCENARIOS):
            found += deviations(replay_scenario(name, Path(directory) / name), golden[name], name)
    capability = torch.backends.cpu.get_cpu_capability()
    worst = max(found, default=(0.0, 0.0, 0.0, "-"))
    summary = f"{len(found)} numbers differ; the worst used {worst[0]:.3f} of its tolerance"
    print(f"{capability}, {threads} thread(s): {summary}")
    for used, relative, gap, where in sorted(found, reverse=True)[:12]:
        print(f"  {used:8.3f} of tolerance  {relative:9.2e} relative  {gap:9.2e} absolute  {where}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--write"]:
        write_golden()
    elif sys.argv[1:2] == ["--spread"] and len(sys.argv) <= 3:
        print_spread(int(sys.argv[2]) if len(sys.argv) == 3 else 1)
    else:
        raise SystemExit("usage: python -m tests.test_learner_golden --write | --spread [THREADS]")
