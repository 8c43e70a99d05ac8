"""Quick start: one scripted FunctionGym episode, printed as a transcript with its score.

Run with `.venv/bin/python examples/quickstart.py` (after `make test` or `make run` created the venv).
No model, no network.

The "agent" here is a fixed script: it probes the hidden function three times, asks for the
test case, then answers with the env's privileged oracle (which sees the hidden rule). A real
agent would deduce the rule from the probes; the oracle only shows what a winning episode looks
like and what the env returns at each step.
"""

from __future__ import annotations

import gymnasium as gym

import mimesis_gym  # noqa: F401  (registers the "mimesis/" env ids)


def main() -> None:
    env = gym.make("mimesis/FunctionGym-v0", split="demo", render_mode="ansi")
    obs, info = env.reset(seed=0, options={"task_id": "fn-demo-01"})

    # Probing: vary one input at a time, as the system prompt suggests.
    probes = ["[action] 1 1 1 1", "[action] 2 1 1 1", "[action] 1 1 2 1"]
    for action in probes:
        obs, reward, terminated, truncated, info = env.step(action)

    # Ask for the test case, then let the privileged oracle answer.
    env.step("[search] test")
    obs, reward, terminated, truncated, info = env.step(env.unwrapped.oracle_action())

    print(env.render())
    print(f"\nterminated={terminated} truncated={truncated} episode score={info['episode_score']}")
    env.close()


if __name__ == "__main__":
    main()
