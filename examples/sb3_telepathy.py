"""Train a classic RL agent (stable-baselines3 PPO) to play TelepathyGym's twenty questions.

Run with `python examples/sb3_telepathy.py` inside the venv (needs the `sb3` extra). No language
model, no network: the user is TelepathyGym's scripted answerer, and `TelepathyDiscreteEnv` turns the
text game into numbers:

- action: ask one of Q fixed yes/no questions ("Can it fly?", "Is it a mammal?", "Is it grey?") or
  guess one of M candidate entities;
- observation: for each question whether it is unasked / answered yes / no / unknown, which
  candidates were already guessed wrongly, and the fraction of the 16 turns used;
- reward: the env's own, 1.0 for the correct guess (which ends the episode), else 0.0.

The script measures a uniformly random policy, trains PPO, and measures the trained policy on the
same held-out episodes: seeds the training never used, so the targets and the order in which they
come are new draws (the candidates themselves must be the same — a guess action names one of them).
Guessing is free except for the turn it costs, so a good policy asks a few questions that split the
candidates, then guesses.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import numpy as np
import torch
from stable_baselines3 import PPO
from stable_baselines3.common.vec_env import DummyVecEnv

from mimesis_gym.envs.telepathy.discrete import TelepathyDiscreteEnv

EVAL_SEED_BASE = 1_000_000
"""Held-out episodes use seeds from here on; the training envs are seeded from ``--seed`` (small numbers)."""


def make_env(categories: list[str]) -> TelepathyDiscreteEnv:
    # The candidates share one teaser ("I am thinking of an animal"), so it carries no information:
    # leave it out and let the questions do the work.
    return TelepathyDiscreteEnv(split="train", categories=categories, show_teaser=False)


def evaluate(env: TelepathyDiscreteEnv, policy: Callable[[np.ndarray], int], episodes: int) -> dict[str, float]:
    """Play ``episodes`` episodes with seeds ``EVAL_SEED_BASE + k``; success = episode score 1.0."""
    successes, rewards, turns = [], [], []
    for k in range(episodes):
        obs, _ = env.reset(seed=EVAL_SEED_BASE + k)
        total, turn, done = 0.0, 0, False
        while not done:
            obs, reward, terminated, truncated, _ = env.step(policy(obs))
            total, turn, done = total + reward, turn + 1, terminated or truncated
        successes.append(total >= 1.0)
        rewards.append(total)
        turns.append(turn)
    return {"success": float(np.mean(successes)), "reward": float(np.mean(rewards)), "turns": float(np.mean(turns))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--timesteps", type=int, default=60_000, help="PPO training steps (env turns)")
    parser.add_argument("--episodes", type=int, default=300, help="held-out evaluation episodes")
    parser.add_argument("--categories", nargs="+", default=["animal"], help="candidate pool (train split)")
    parser.add_argument("--n-envs", type=int, default=8, help="parallel envs in the DummyVecEnv")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    # A 64×64 MLP is far too small to profit from several threads; one thread avoids contention.
    torch.set_num_threads(1)

    env = make_env(args.categories)
    print(
        f"pool: {len(env.candidates)} candidates ({', '.join(c.title for c in env.candidates)}); "
        f"{len(env.questions)} questions; {env.action_space.n} actions; "
        f"observation size {env.observation_space.shape[0]}"
    )

    # 1. Baseline: a uniformly random policy on the held-out episodes.
    rng = np.random.default_rng(args.seed)
    random_scores = evaluate(env, lambda obs: int(rng.integers(env.action_space.n)), args.episodes)

    # 2. Train PPO. The hyperparameters follow the rl-zoo's CartPole settings: many short rollouts
    #    (8 envs × 32 steps), many epochs per batch and a short GAE horizon (λ = 0.8), which suit a
    #    short, sparse-reward episode; the reward comes only from the final correct guess.
    vec_env = DummyVecEnv([lambda: make_env(args.categories) for _ in range(args.n_envs)])
    vec_env.seed(args.seed)
    model = PPO(
        "MlpPolicy",
        vec_env,
        n_steps=32,
        batch_size=256,
        n_epochs=20,
        learning_rate=1e-3,
        gamma=0.98,
        gae_lambda=0.8,
        ent_coef=0.0,
        policy_kwargs={"net_arch": [64, 64]},
        seed=args.seed,
        device="cpu",
    )
    started = time.perf_counter()
    model.learn(total_timesteps=args.timesteps)
    train_seconds = time.perf_counter() - started

    # 3. The trained policy, acting greedily, on the same held-out episodes.
    ppo_scores = evaluate(env, lambda obs: int(model.predict(obs, deterministic=True)[0]), args.episodes)

    print(f"trained {args.timesteps} steps in {train_seconds:.0f} s; {args.episodes} held-out episodes:")
    print(f"{'policy':<8} {'success':>8} {'reward':>8} {'turns':>6}")
    for name, scores in (("random", random_scores), ("PPO", ppo_scores)):
        print(f"{name:<8} {scores['success']:>8.1%} {scores['reward']:>8.3f} {scores['turns']:>6.2f}")
    vec_env.close()
    env.close()


if __name__ == "__main__":
    main()
