"""examples/train_simulator_abcd.py: the customer policy of ABCDBehavior trains with FoldGRPO on three behaviors."""

import importlib.util
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.testing import tiny_random_model  # noqa: E402
from mimesis_gym.envs.abcd.tasks import load_original_pack  # noqa: E402
from tests.support.torch_fixtures import one_thread, tiny_random_model_available  # noqa: E402, F401

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "train_simulator_abcd.py"


def load_example():
    spec = importlib.util.spec_from_file_location("train_simulator_abcd_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_example_trains_the_customer_on_the_chosen_behaviors(tmp_path, capsys):
    example = load_example()
    trainer, scores = example.main(["--policy", "random", "--steps", "2", "--output-dir", str(tmp_path)])
    assert trainer.config.advantage.estimator == "foldgrpo" and trainer.config.rollout.group_size == 4
    (spec,) = trainer.envs
    conditions = {row.id: row.condition for row in load_original_pack()}
    assert {conditions[task] for task in spec.train_tasks + spec.val_tasks} == {"B7", "B12", "B13"}
    assert [metrics["step"] for metrics in trainer.history] == [1, 2]
    for metrics in trainer.history:
        assert metrics["episode/turns_mean"] == 1  # one customer message per chat (turn_budget=1)
        assert 0 <= metrics["reward/mean"] <= 1
    assert 0 <= scores["before"] <= 1 and 0 <= scores["after"] <= 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("a train row: B") and "from the scripted judge" in lines[1]
    assert [line.split(":")[0] for line in lines if line.startswith("step")] == ["step 1", "step 2"]
    initial, _ = tiny_random_model(seed=0)
    pairs = zip(initial.parameters(), trainer.policy_model.parameters(), strict=True)
    moved = [not torch.equal(a, b) for a, b in pairs]
    # the random model's messages differ within a group (an empty one scores 0), so FoldGRPO has a signal; which
    # groups tie is sampling's choice (it differs across CPUs), so the check asks for one signal in two steps
    signalled = [metrics for metrics in trainer.history if metrics["group/zero_std_frac"] < 1]
    assert signalled and all(metrics["loss/pg"] != 0 for metrics in signalled)
    assert all(moved)
