"""A learner of your own in about forty lines: REINFORCE with a running-mean baseline (docs/writing-a-learner.md).

Every action token of an episode gets the advantage ``A = R − b``: ``R`` is the episode's total
reward, ``b`` a running mean of earlier batches' mean reward (``b ← b + 0.5·(mean R − b)`` after each
batch). The trainer does the rest: with one optimizer step per rollout batch (the ``cpu-tiny``
preset) its PPO ratio is exactly 1, so the clipped loss has the REINFORCE gradient ``−A·∇log π``.

The learner overrides three hooks of :class:`~mimesis_gym.algorithms.learners.Learner`
(``advantages``, ``metrics`` and the checkpoint state) and is registered at run time, then selected
by its name. Run ``python examples/custom_learner.py`` (the 2-layer random test model, seconds) or
``--policy tiny`` (SmolLM2-135M, minutes).
"""

from __future__ import annotations

import argparse
from typing import Any

import torch

from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.learners import Learner, RolloutBatch, register_learner
from mimesis_gym.algorithms.testing import ENV_ID, tiny_random_model
from mimesis_gym.algorithms.trainer import Trainer


class ReinforceWithBaseline(Learner):
    """``A = R − b`` for every turn of an episode; ``b`` is a running mean of the batches' mean reward."""

    name = "reinforce"
    momentum = 0.5

    def __init__(self, services: Any) -> None:
        super().__init__(services)
        self.baseline = 0.0

    def advantages(self, batch: RolloutBatch) -> list[list[float]]:
        returns = [episode.reward_sum for episode in batch.episodes]
        values = [[r - self.baseline] * len(e.turns) for e, r in zip(batch.episodes, returns, strict=True)]
        self.baseline += self.momentum * (sum(returns) / max(1, len(returns)) - self.baseline)
        return values

    def metrics(self, batch: RolloutBatch) -> dict[str, float]:
        return {"reinforce/baseline": self.baseline}

    def state_dict(self) -> dict[str, Any]:
        return {"reinforce_baseline": self.baseline}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.baseline = float(state.get("reinforce_baseline", 0.0))


def main(argv: list[str] | None = None) -> Trainer:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--policy", choices=["random", "tiny"], default="random")
    parser.add_argument("--output-dir", default="runs/custom_learner")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # small models: one thread beats two busy ones
    register_learner(ReinforceWithBaseline)
    config = TrainerConfig.preset("cpu-tiny").with_overrides(
        [f"run.total_steps={args.steps}", f"run.output_dir={args.output_dir}", "run.progress=false"]
    )
    policy = tiny_random_model(seed=0) if args.policy == "random" else "tiny"
    # the parity rule rewards even-length replies, so a random model gets mixed rewards to learn from
    envs = [(ENV_ID, {"reward_rule": "parity"})] if args.policy == "random" else [ENV_ID]
    trainer = Trainer(envs, policy, algorithm="reinforce", config=config)
    for _ in range(args.steps):
        metrics = trainer.step()
        print(
            f"step {metrics['step']}: reward {metrics['reward/mean']:.3f}, baseline {metrics['reinforce/baseline']:.3f}"
        )
    return trainer


if __name__ == "__main__":
    main()
