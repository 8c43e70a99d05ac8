"""Env overhead: FunctionGym beside a bare ``gymnasium.Env`` that does nothing, measured in one run,
then every registered env's construct+reset and one scripted step beside FunctionGym's.

Prints the median cost of construct+reset and of one step, for the raw env classes and through
``gym.make`` (which adds TimeLimit, OrderEnforcing and the passive checker), and the ratios.
Targets on a 2-core CPU (issues #2, #5): construct+reset ≤ 0.1 ms after the first load for every
env, FunctionGym's step ≤ 12 µs (UserRL's FunctionGym: 1.0 ms and 12 µs; UserRL's TravelGym re-reads
eight data files and reshuffles every option table at each construction).

The two sides alternate batch by batch. Ends with one ``report_ratio`` row (benchmarks/ratios.py) per
FunctionGym measure beside the bare env (no ratio goal: the targets are absolute, printed above).

    python benchmarks/env_overhead.py [--repeats 41] [--batch 200]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any, ClassVar

import gymnasium as gym
from ratios import load_average, report_ratio

import mimesis_gym  # noqa: F401
from mimesis_gym.core.spaces import UnicodeText
from mimesis_gym.envs import ENV_TABLE
from mimesis_gym.envs.function.env import FunctionEnv

ACTIONS = ["[action] 1 2 3 4", "[action] 2 2 3 4", "[search] test", "[answer] 12345"]  # never terminates


class BareEnv(gym.Env[str, str]):
    """The floor: a text env whose reset and step do nothing."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self) -> None:
        self.observation_space = UnicodeText()
        self.action_space = UnicodeText()

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return "", {}

    def step(self, action):
        return "", 0.0, False, False, {}


if "bench/Bare-v0" not in gym.registry:
    gym.register("bench/Bare-v0", entry_point=BareEnv, max_episode_steps=10**9)


def batch_us(run_batch: Callable[[int], None], batch: int) -> float:
    """The mean cost of one call over one batch, in microseconds."""
    start = time.perf_counter_ns()
    run_batch(batch)
    return (time.perf_counter_ns() - start) / batch / 1000


def median_us(run_batch: Callable[[int], None], batch: int, repeats: int) -> float:
    """Median over ``repeats`` batches of the mean cost of one call, in microseconds."""
    return statistics.median(batch_us(run_batch, batch) for _ in range(repeats))


def paired_us(
    ours: Callable[[int], None], bare: Callable[[int], None], batch: int, repeats: int
) -> tuple[list[float], list[float]]:
    """Per-call microseconds of ``ours`` and ``bare`` over ``repeats`` batches each, alternated."""
    pairs = [(batch_us(ours, batch), batch_us(bare, batch)) for _ in range(repeats)]
    return [o for o, _ in pairs], [b for _, b in pairs]


def construct_reset(factory: Callable[[], gym.Env]) -> Callable[[int], None]:
    def run(n: int) -> None:
        for i in range(n):
            factory().reset(seed=i)

    return run


def stepping(env: gym.Env) -> Callable[[int], None]:
    env.reset(seed=0)

    def run(n: int) -> None:
        step = env.step
        for i in range(n):
            step(ACTIONS[i & 3])

    return run


SCRIPTED_STEP = "[action] Could you tell me a bit more?"
"""One turn every env accepts (or rejects with its exact message) and answers with a scripted role."""


def scripted_steps(env: Any) -> Callable[[int], None]:
    """Step ``SCRIPTED_STEP`` repeatedly, resetting (uncounted cost is small) whenever an episode ends."""
    env.reset(seed=0)

    def run(n: int) -> None:
        for i in range(n):
            _, _, terminated, truncated, _ = env.step(SCRIPTED_STEP)
            if terminated or truncated:
                env.reset(seed=i)

    return run


def per_env_rows(batch: int, repeats: int) -> list[tuple[str, float, float]]:
    """(short name, construct+reset µs, scripted step µs) of every registered env, raw classes."""
    rows = []
    for entry in ENV_TABLE:
        if entry.kind != "conversation":
            continue
        env_class = entry.env_class()
        env_class(split="test").reset(seed=0)  # first load: packs, indexes, caches
        reset_us = median_us(construct_reset(lambda cls=env_class: cls(split="test")), batch, repeats)
        step_us = median_us(scripted_steps(env_class(split="test")), batch, repeats)
        rows.append((entry.short, reset_us, step_us))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=41)
    parser.add_argument("--batch", type=int, default=200)
    args = parser.parse_args()
    load_at_start = load_average()

    FunctionEnv().reset(seed=0)  # the first load reads the pack once per process
    rows, reports = [], []
    for label, ours, bare in [
        ("construct+reset (raw class)", construct_reset(FunctionEnv), construct_reset(BareEnv)),
        (
            "construct+reset (gym.make)",
            construct_reset(lambda: gym.make("mimesis/FunctionGym-v0")),
            construct_reset(lambda: gym.make("bench/Bare-v0")),
        ),
        ("step (raw class)", stepping(FunctionEnv()), stepping(BareEnv())),
        (
            "step (gym.make wrappers)",
            stepping(gym.make("mimesis/FunctionGym-v0", max_episode_steps=10**9)),
            stepping(gym.make("bench/Bare-v0")),
        ),
    ]:
        ours_runs, bare_runs = paired_us(ours, bare, args.batch, args.repeats)
        ours_us, bare_us = statistics.median(ours_runs), statistics.median(bare_runs)
        rows.append((label, ours_us, bare_us, ours_us / bare_us))
        spread = [o / b for o, b in zip(ours_runs, bare_runs, strict=True)]
        reports.append(lambda label=label, o=ours_us, b=bare_us, spread=spread: report_ratio(
            "env_overhead", f"FunctionGym {label}", unit="us", anchor="bare gymnasium.Env", anchor_value=b,
            project_value=o, better="lower", n=args.repeats, spread=spread, load_at_start=load_at_start))  # fmt: skip

    print(f"{'measure':<30} {'FunctionGym':>12} {'bare Env':>10} {'ratio':>7}")
    for label, ours_us, bare_us, ratio in rows:
        print(f"{label:<30} {ours_us:>10.2f}µs {bare_us:>8.2f}µs {ratio:>6.1f}x")
    print("targets: construct+reset ≤ 100 µs, step ≤ 12 µs (UserRL FunctionGym: 1000 µs, 12 µs)")
    print()
    env_rows = per_env_rows(max(1, args.batch // 4), max(5, args.repeats // 4))
    function_reset = next(reset for name, reset, _ in env_rows if name == "function")
    print(f"every env, raw class, scripted user; step = {SCRIPTED_STEP!r}")
    print(f"{'env':<12} {'construct+reset':>16} {'vs function':>12} {'scripted step':>14}")
    for name, reset_us, step_us in env_rows:
        flag = "" if reset_us <= 100 else "  (over 0.1 ms)"
        print(f"{name:<12} {reset_us:>14.1f}µs {reset_us / function_reset:>11.2f}x {step_us:>12.1f}µs{flag}")
    print()
    for report in reports:
        report()


if __name__ == "__main__":
    main()
