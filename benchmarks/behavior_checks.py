"""How well the enactment checks read the scripted users, over every task of the shipped packs.

For each env whose user plays behaviours, the contract's probe agent (``BEHAVIOR_PROBE``) plays every
train and test task of the original pack once under control and once under each behaviour the env
plays, with the scripted user. Printed per env and behaviour:

- ``enacted``: the share of episodes under the behaviour whose check fired (the scripted user is written
  to be read, so anything below 100% is a task where the behaviour had no cue: e.g. a TauGym task whose
  goal holds at once, so the customer leaves before turn 2);
- ``false``: the share of control episodes where that behaviour's check fired anyway (the pack's own
  wording matching a phrase list).

Nothing is timed or asserted; the numbers go into docs/behaviors.md ("Was it enacted?").

    python benchmarks/behavior_checks.py [--envs travel,tau] [--limit N]
"""

from __future__ import annotations

import argparse
import time

import gymnasium as gym

import mimesis_gym  # noqa: F401  (registers the envs)
from mimesis_gym.behaviors.detect import detect
from mimesis_gym.envs.behavior_table import applicability
from mimesis_gym.evaluation.contract import BEHAVIOR_PROBE


def play(env_id: str, split: str, task_id: str, behavior: str) -> object:
    """The probe on one task under ``behavior``; the unwrapped env after the episode."""
    env = gym.make(env_id, split=split, user_behavior=behavior)
    env.reset(seed=0, options={"task_id": task_id})
    for action in BEHAVIOR_PROBE:
        result = env.step(action)
        if result[2] or result[3]:
            break
    env.close()
    return env.unwrapped


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", help="short env names, comma-separated (default: every env with a user)")
    parser.add_argument("--limit", type=int, help="tasks per split at most")
    args = parser.parse_args()
    wanted = set(args.envs.split(",")) if args.envs else None
    started = time.perf_counter()
    print("| env | tasks | behaviour | enacted | false (control) |")
    print("|---|---|---|---|---|")
    for entry, spec in applicability():
        if not spec.applicable or (wanted and entry.short not in wanted):
            continue
        pack = entry.env_class().load_task_pack("original", None)
        tasks = [(split, task.id) for split in ("train", "test") for task in pack.pool(split)[: args.limit]]
        fired = dict.fromkeys(spec.applicable, 0)
        enacted = dict.fromkeys(spec.applicable, 0)
        for split, task_id in tasks:
            control = play(entry.id, split, task_id, "control")
            facts = control.user_behavior_facts()
            for behavior in spec.applicable:
                fired[behavior] += detect(behavior, control.user_exchanges, facts).enacted
                played = play(entry.id, split, task_id, behavior)
                enacted[behavior] += detect(behavior, played.user_exchanges, played.user_behavior_facts()).enacted
        for behavior in spec.applicable:
            n = len(tasks)
            print(f"| {entry.short} | {n} | {behavior} | {enacted[behavior] / n:.0%} | {fired[behavior] / n:.0%} |")
    print(f"\n{time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
