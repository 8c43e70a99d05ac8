"""Train the user side: the embedded tiny model plays ABCDBehavior's customer and learns with FoldGRPO, on CPU.

In ABCDBehavior the roles are turned around: the **policy is the simulated customer**, told to enact
a realistic behavior (here B7, B12 or B13: piling on constraints, cramming many requests into one
message, belittling pressure); the scripted support agent answers and the scripted judge scores the
chat. This is the simulator's RL stage of the paper (``recipes/simulator_abcd.yaml``), scaled down
to one CPU: the ``mimesis-simulator-cpu`` preset (FoldGRPO) with small groups, one customer message per
chat and 48 tokens per message, on the train rows of the three behaviors (the env's ``behaviors=``
filter); the greedy judge reward on their held-out test rows is shown before and after.

    python examples/train_simulator_abcd.py [--steps 3] [--policy tiny|random] [--output-dir DIR]

With ``--policy tiny`` (the default, SmolLM2-135M) three steps take several minutes on one core;
``--policy random`` (a 2-layer random model) runs in seconds and only shows the mechanics.
``benchmarks/learning_simulator.py`` runs the same setup over three seeds and checks for learning.
"""

from __future__ import annotations

import argparse
from typing import Any

import gymnasium as gym
import torch

import mimesis_gym  # noqa: F401  (registers the envs)
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.testing import tiny_random_model
from mimesis_gym.algorithms.trainer import Trainer

ENV_ID = "mimesis/ABCDBehavior-v0"
BEHAVIORS = ["B7", "B12", "B13"]


def main(argv: list[str] | None = None) -> tuple[Trainer, dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--policy", choices=["tiny", "random"], default="tiny")
    parser.add_argument("--output-dir", default="runs/example_simulator_abcd")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)  # a small model runs faster on one thread than on two busy ones

    # 1. The env, restricted to three behaviors. The think gate is off: reward_profile="train" would give 0
    #    to every message without a <think> block, and the tiny model was never taught to write one.
    #    One customer message per chat keeps a step affordable on CPU; all three behaviors may show at turn 1.
    env_kwargs = {"behaviors": BEHAVIORS, "require_think": False, "turn_budget": 1}
    env = gym.make(ENV_ID, split="train", **env_kwargs)
    env.reset(seed=0)
    print(f"a train row: {env.unwrapped.row.condition}, directive: {env.unwrapped.secret_texts()[0]!r}")
    _, reward, _, _, info = env.step("I can't log in, I don't have the receipt and I lost my card. Do it now.")
    parts = {key: info["reward_parts"][key] for key in ("exhibit", "placement", "naturalness", "on_task")}
    print(f"a hand-written message gets R = {reward:.2f} from the scripted judge: {parts}")

    # 2. The simulator preset scaled to a CPU ("mimesis-simulator-cpu"): FoldGRPO (score = the sum of turn
    #    rewards, normalised within a group of G = 4 chats of the same row), 4 rows per step, one customer
    #    message of at most 48 tokens per chat, one optimizer step per step.
    config = TrainerConfig.preset("mimesis-simulator-cpu").with_overrides(
        [f"run.total_steps={args.steps}", f"run.output_dir={args.output_dir}", "run.resume=never", "run.progress=false"]
    )

    # 3. The trainer: the policy is the customer; user="scripted" is the counterpart (the support agent).
    policy = tiny_random_model(seed=0) if args.policy == "random" else "tiny"
    trainer = Trainer([(ENV_ID, env_kwargs)], policy, user="scripted", algorithm="foldgrpo", config=config)
    before = trainer.evaluate(split="test")["val/score_mean"]
    print(f"greedy judge reward on the {BEHAVIORS} test rows before training: {before:.3f}")
    for _ in range(args.steps):
        metrics = trainer.step()
        print(
            f"step {metrics['step']}: mean reward {metrics['reward/mean']:.3f}, groups with no signal "
            f"{metrics['group/zero_std_frac']:.2f}, messages cut by the token cap "
            f"{metrics['episode/truncated_frac']:.2f}, {metrics['time/step']:.0f} s"
        )
    # A message cut by the 48-token cap ends the chat unjudged (reward 0): FoldGRPO also learns to finish.
    after = trainer.evaluate(split="test")["val/score_mean"]
    print(f"greedy judge reward on the test rows after {args.steps} steps: {after:.3f}")
    return trainer, {"before": before, "after": after}


if __name__ == "__main__":
    main()
