"""examples/custom_learner.py: a learner registered at run time trains 3 steps on KeywordEcho and resumes."""

import importlib.util
import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="the local stack is installed by `make test`")

from mimesis_gym.algorithms.learners import algorithm_names  # noqa: E402
from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model  # noqa: E402
from mimesis_gym.algorithms.trainer import Trainer  # noqa: E402
from tests.support.torch_fixtures import learner_registry, one_thread, tiny_random_model_available  # noqa: E402, F401

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "custom_learner.py"


def load_example():
    spec = importlib.util.spec_from_file_location("custom_learner_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.usefixtures("learner_registry")
def test_the_example_learner_trains_three_steps_and_resumes(tmp_path, capsys):
    example = load_example()
    trainer = example.main(["--steps", "3", "--output-dir", str(tmp_path)])
    assert "reinforce" in algorithm_names() and [type(learner).__name__ for learner in trainer.learners] == [
        "ReinforceWithBaseline"
    ]
    history = trainer.history
    assert [metrics["step"] for metrics in history] == [1, 2, 3]
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == ["step 1", "step 2", "step 3"]
    baseline = 0.0
    assert history[0]["adv/mean"] > 0  # the first baseline is 0: every advantage is the episode's reward (≥ 0)
    for metrics in history:
        baseline += 0.5 * (metrics["reward/mean"] - baseline)
        assert metrics["reinforce/baseline"] == pytest.approx(baseline)
        assert "group/zero_std_frac" not in metrics  # the learner's advantages replaced the estimator's
        assert metrics["loss/pg"] != 0
    assert 0 < history[0]["reward/mean"] < 3  # mixed rewards under the parity rule
    assert trainer.counters["old_logprob_passes"] == 0 and trainer.counters["student_forwards"] == 3
    initial, _ = tiny_random_model(seed=0)
    moved = [
        not torch.equal(a, b) for a, b in zip(initial.parameters(), trainer.policy_model.parameters(), strict=True)
    ]
    assert all(moved)

    checkpoint = trainer.save_checkpoint()
    state = json.loads((checkpoint / "trainer_state.json").read_text())
    assert state["reinforce_baseline"] == pytest.approx(baseline) and "placebo_pool" not in state
    resumed = Trainer([(ENV_ID, {"reward_rule": "parity"})], tiny_random_model(seed=1), "scripted", "reinforce",
                      config=trainer.config)  # fmt: skip
    assert resumed.state.step == 3 and resumed.learners[0].baseline == pytest.approx(baseline)
