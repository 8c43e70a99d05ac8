"""Content retries measured side by side: the same TurtleGym workload with retries off and on.

A vLLM server serves the tiny model as TurtleGym's user and judges (temperature 0, JSON roles), with
``json_mode`` ``auto`` (the server's structured output: a JSON schema that requires the role's keys),
``off`` (JSON asked for by the prompt only, as for thinking models such as MIMESIS) and, with
``--json-modes object``, the tier of a server that refuses schemas (any JSON object).
The same episodes — same tasks, seeds and agent questions — run in one process with retries
``off`` (``content_retries=0``, no refusal retry: a bad reply falls back at once), ``on`` as before
issue 31 (every content fault retried: the repair turn, the rejected reply quoted back with one
instruction and another seed, no backoff sleep; ``content_retry_window=0``), ``adaptive`` (the
default: a fault kind stops being retried for a role once the last 8 retried calls rescued none)
and ``adaptive warm`` (the same adaptive client again over the same episodes, as later in a longer
run, its window already spent). Both one by one and 16 episodes at a time. Prints steps/s, requests
per step, the requests relative to retries off and failed steps (steps whose ``info["user_failure"]``
is set) for each, then two ``report_ratio`` rows (benchmarks/ratios.py) per json mode and
concurrency: requests/step of adaptive (warm) over off and, where retries on answered more steps than
off, the share of steps answered by adaptive over on.

Goals: retries on reach >= 1.0x the steps/s of retries off and fail fewer steps (issue 13); where
retries never help, adaptive sends <= 1.1x the requests of retries off once its window is spent,
and fails no more steps than ``on`` where they do (issue 31).

    python benchmarks/content_retries.py [--base-url URL] [--episodes 16] [--turns 3]

Without --base-url it starts `serve-user tiny` with $MIMESIS_VLLM_PYTHON (default .venv-vllm).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
from ratios import load_average, report_ratio

import mimesis_gym  # noqa: F401  (registers the env ids)
from mimesis_gym.core.conventions import RetryPolicy
from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel

QUESTIONS = (
    "[action] Did someone die in this story?",
    "[action] Was the person alone when it happened?",
    "[action] Is the weather important to what happened?",
    "[action] Did the person know what would happen?",
    "[action] Is there an animal involved?",
)
ROLE_MAX_TOKENS = 64


class CountingModel(OpenAIChatModel):
    """Our HTTP client, counting the requests it sends (retries included)."""

    requests = 0

    async def post(self, body: dict[str, Any], attempt: int = 1) -> dict[str, Any]:
        CountingModel.requests += 1
        return await super().post(body, attempt)


@dataclass
class Result:
    steps: int
    failed: int
    requests: int
    seconds: float

    @property
    def steps_per_s(self) -> float:
        return self.steps / self.seconds


VARIANTS = ("off", "on", "adaptive")


def make_user(base_url: str, variant: str, json_mode: str) -> CountingModel:
    """The user client with retries ``variant`` (one of :data:`VARIANTS`); ``json_mode`` ``object`` is
    ``on`` with the JSON schema dropped, as for a server that refuses schemas: ``response_format`` asks
    for any JSON object (the keys by the prompt only)."""
    retries = variant != "off"
    config = EndpointConfig(
        base_url=base_url,
        model="tiny",
        max_concurrency=64,
        content_retries=2 if retries else 0,
        content_retry_window=0 if variant == "on" else EndpointConfig.model_fields["content_retry_window"].default,
        json_mode="on" if json_mode == "object" else json_mode,
    )
    policy = RetryPolicy(
        max_retries=config.max_retries,
        content_retries=config.content_retries,
        refusal_retries=1 if retries else 0,
        content_retry_window=config.content_retry_window,
    )
    model = CountingModel(config, name="tiny", retry_policy=policy)
    if json_mode == "object":
        model.dropped.append("json_schema")
    return model


async def episode(user: CountingModel, task_id: str, seed: int, turns: int) -> tuple[int, int]:
    env: Any = gym.make("mimesis/TurtleGym-v0", user=user, role_max_tokens=ROLE_MAX_TOKENS).unwrapped
    steps = failed = 0
    try:
        await env.areset(seed=seed, options={"task_id": task_id})
        for turn in range(turns):
            _, _, terminated, _, info = await env.astep(QUESTIONS[(seed + turn) % len(QUESTIONS)])
            steps += 1
            failed += info["user_failure"] is not None
            if terminated:
                break
    finally:
        env.close()
    return steps, failed


async def run(user: CountingModel, work: list[tuple[str, int]], turns: int, concurrency: int) -> Result:
    limit = asyncio.Semaphore(concurrency)
    CountingModel.requests = 0

    async def limited(task_id: str, seed: int) -> tuple[int, int]:
        async with limit:
            return await episode(user, task_id, seed, turns)

    started = time.perf_counter()
    try:
        outcomes = await asyncio.gather(*(limited(task_id, seed) for task_id, seed in work))
    finally:
        await user.aclose()  # this loop's client; the model (and its retry ledger) lives on
    seconds = time.perf_counter() - started
    return Result(sum(s for s, _ in outcomes), sum(f for _, f in outcomes), CountingModel.requests, seconds)


def measure(base_url: str, episodes: int, turns: int, json_modes: list[str], load_at_start: float) -> None:
    pack = gym.make("mimesis/TurtleGym-v0").unwrapped.task_pack
    tasks = [task.id for task in pack.pool("test")]
    work = [(tasks[i % len(tasks)], i) for i in range(episodes)]
    asyncio.run(run(make_user(base_url, "on", "auto"), work[:2], 1, 2))  # warm-up
    print(f"{'mode':<52} {'steps/s':>8} {'req/step':>9} {'req/off':>8} {'failed':>7} {'steps':>6}")
    for json_mode, concurrency in [(mode, c) for mode in json_modes for c in (1, 16)]:
        subset = work[:4] if concurrency == 1 else work
        results: dict[str, Result] = {}
        for variant in VARIANTS:  # the same episodes, back to back
            user = make_user(base_url, variant, json_mode)
            results[variant] = asyncio.run(run(user, subset, turns, concurrency))
            if variant == "adaptive":
                results["adaptive warm"] = asyncio.run(run(user, subset, turns, concurrency))
        off = results["off"]
        for variant, result in results.items():
            label = f"json_mode {json_mode}, retries {variant}, {concurrency} at a time"
            print(
                f"{label:<52} {result.steps_per_s:>8.3f} {result.requests / result.steps:>9.2f} "
                f"{(result.requests / result.steps) / (off.requests / off.steps):>7.2f}x "
                f"{result.failed:>7} {result.steps:>6}",
                flush=True,
            )
        report_rows(results, f"json_mode {json_mode}, {concurrency} at a time", load_at_start)


def report_rows(results: dict[str, Result], shape: str, load_at_start: float) -> None:
    """The ratio rows of one json mode and concurrency: requests per step of adaptive retries (window spent)
    over retries off (goal <= 1.1: where retries never help they stop) and, where retries on answered more
    steps than off (they rescue replies), the share of steps answered by adaptive over on (goal >= 1.0)."""
    off = results["off"]
    report_ratio("content_retries", f"requests/step, adaptive retries (window spent), {shape}",
                 unit="requests/step", anchor="retries off", anchor_value=off.requests / off.steps,
                 project_value=results["adaptive warm"].requests / results["adaptive warm"].steps, better="lower",
                 n=1, goal=1.1, load_at_start=load_at_start)  # fmt: skip
    answered = {variant: (r.steps - r.failed) / r.steps for variant, r in results.items()}
    if answered["on"] <= answered["off"]:
        print(f"(no rescue row for {shape}: retries on answered no more steps than off, so none were rescued)")
        return
    report_ratio("content_retries", f"steps answered (rescue), adaptive retries, {shape}", unit="share of steps",
                 anchor="retries on", anchor_value=answered["on"], project_value=answered["adaptive"],
                 better="higher", n=1, goal=1.0, load_at_start=load_at_start)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("MIMESIS_VLLM_TEST_BASE_URL"))
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument(
        "--json-modes",
        default="auto,off",
        help="auto: the server's structured output; off: prompt only; object: any JSON object (no schema)",
    )
    args = parser.parse_args()
    modes = args.json_modes.split(",")
    load_at_start = load_average()
    if args.base_url:
        measure(args.base_url, args.episodes, args.turns, modes, load_at_start)
        return
    from mimesis_gym.users.serve import tiny_server

    python = os.environ.get("MIMESIS_VLLM_PYTHON", str(Path(__file__).resolve().parents[1] / ".venv-vllm/bin/python"))
    with tiny_server(python, log_file=os.devnull) as server:
        server.wait_healthy(timeout_s=600)
        measure(server.command.base_url, args.episodes, args.turns, modes, load_at_start)


if __name__ == "__main__":
    main()
