"""Train the embedded tiny model with multi-turn GRPO for 5 steps, on CPU (a few minutes).

The task is KeywordEcho, the learners' test env: the simulated user asks for exactly one given word
("Reply with exactly one word: apple"); a reply holding that word in at most three words earns 1.0
and ends the episode, anything else earns 0 and the user repeats the request (3 turns at most).
The untrained SmolLM2-135M-Instruct chats instead of answering with one word, so there is
something to learn, and every episode takes seconds.

Run it with ``python examples/train_grpo_tiny.py`` inside the venv (``make test`` installs the
``train`` extra and the tiny model). ``benchmarks/learning_grpo.py`` runs the same setup for 30
steps and three seeds and checks that learning happens.
"""

from __future__ import annotations

import gymnasium as gym
import torch

from mimesis_gym.algorithms import testing
from mimesis_gym.algorithms.config import TrainerConfig
from mimesis_gym.algorithms.trainer import Trainer


def main() -> None:
    # Small models run faster on one CPU thread than on two busy ones (no spin-waiting between threads).
    torch.set_num_threads(1)

    # 1. The environment. Importing ``mimesis_gym.algorithms.testing`` registered it; one episode by hand
    #    shows what the policy will see: the opening request, then the user's reply with the step's
    #    reward appended (``reward_profile="train"``, as UserRL and the MIMESIS release train).
    env = gym.make(testing.ENV_ID, split="train", reward_profile="train")
    obs, _ = env.reset(seed=0, options={"task_id": "train-00"})
    print("opening:", obs)
    print("a chatty reply gets:", env.step("Sure! The word you asked for is apple.")[0].replace("\n", " | "))
    print("the bare word gets: ", env.step("apple")[0].replace("\n", " | "))

    # 2. The configuration. The ``cpu-tiny`` preset (docs/algorithms.md) samples G = 4 episodes per
    #    task and 4 tasks per step. Groups are what GRPO needs: the 4 members share the task and the
    #    user's behaviour, so the only difference between their rewards is the policy's own samples.
    #    One mini-batch per rollout batch means one optimizer step per step, so the "old" log-probs
    #    of the PPO ratio are the current ones and need no extra forward pass.
    config = TrainerConfig.preset("cpu-tiny").with_overrides(
        [
            "run.total_steps=5",
            "run.output_dir=runs/example_grpo_tiny",
            "run.resume=never",  # start fresh every time this example runs
            "run.progress=false",
        ]
    )
    print("\nestimator:", config.advantage.estimator, config.advantage.estimator_options())

    # 3. The trainer. ``"grpo"`` is multi-turn GRPO with UserRL's credit assignment: each episode's
    #    score is its discounted reward-to-go G_1 (γ = 0.8 per turn), normalised within its group;
    #    each turn's tokens get that advantage scaled by the turn's own reward-to-go. Collection is
    #    token-exact: every turn is generated from the ids the policy already saw, and the user's
    #    replies are appended as chat-template deltas, never re-tokenised.
    trainer = Trainer([testing.ENV_ID], policy="tiny", user="scripted", algorithm="grpo", config=config)

    # 4. A baseline: greedy episodes on the 4 demo keywords (held-out words).
    before = trainer.evaluate(split="demo")["val/score_mean"]
    print(f"greedy success on the demo keywords before training: {before:.2f}")

    # 5. The loop: collect → advantages → PPO-clip update → log, once per step.
    for _ in range(config.run.total_steps):
        metrics = trainer.step()
        print(
            f"step {metrics['step']}: mean reward {metrics['reward/mean']:.2f}, "
            f"groups with no signal {metrics['group/zero_std_frac']:.2f}, "
            f"policy loss {metrics['loss/pg']:+.4f}, clipped {metrics['pg_clipfrac']:.2f}, "
            f"{metrics['time/step']:.0f} s"
        )
    # Groups whose members all succeed (or all fail) tie: their advantages are exactly 0 and they
    # teach nothing. GRPO learns from the groups where some samples did better than others.

    after = trainer.evaluate(split="demo")["val/score_mean"]
    print(f"greedy success on the demo keywords after 5 steps: {after:.2f}")
    print("metrics of every step:", trainer.output_dir / "metrics.jsonl")


if __name__ == "__main__":
    main()
