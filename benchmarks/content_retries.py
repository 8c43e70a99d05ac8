"""Content retries measured side by side: the same TurtleGym workload with retries off and on.

A vLLM server serves the tiny model as TurtleGym's user and judges (temperature 0, JSON roles), with
``json_mode`` ``auto`` (the server's structured output: a JSON schema that requires the role's keys),
``off`` (JSON asked for by the prompt only, as for thinking models such as MIMESIS) and, with
``--json-modes object``, the tier of a server that refuses schemas (any JSON object).
The same episodes — same tasks, seeds and agent questions — run twice in one process: once with
retries off (``content_retries=0``, no refusal retry: a bad reply falls back at once) and once
with retries on (the repair turn: the rejected reply quoted back with one instruction and another
seed, no backoff sleep). Both one by one and 16 episodes at a time. Prints steps/s, requests per
step and failed steps (steps whose ``info["user_failure"]`` is set) for each, and the on/off ratios.

Goal (issue 13): retries on reach >= 1.0x the steps/s of retries off and fail fewer steps.

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


def make_user(base_url: str, retries: bool, json_mode: str) -> CountingModel:
    """The user client; ``json_mode`` ``object`` is ``on`` with the JSON schema dropped, as for a server
    that refuses schemas: ``response_format`` asks for any JSON object (the keys by the prompt only)."""
    config = EndpointConfig(
        base_url=base_url,
        model="tiny",
        max_concurrency=64,
        content_retries=2 if retries else 0,
        json_mode="on" if json_mode == "object" else json_mode,
    )
    policy = RetryPolicy(
        max_retries=config.max_retries,
        content_retries=config.content_retries,
        refusal_retries=1 if retries else 0,
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


async def run(
    base_url: str, retries: bool, work: list[tuple[str, int]], turns: int, concurrency: int, json_mode: str
) -> Result:
    user = make_user(base_url, retries, json_mode)
    limit = asyncio.Semaphore(concurrency)
    CountingModel.requests = 0

    async def limited(task_id: str, seed: int) -> tuple[int, int]:
        async with limit:
            return await episode(user, task_id, seed, turns)

    started = time.perf_counter()
    outcomes = await asyncio.gather(*(limited(task_id, seed) for task_id, seed in work))
    seconds = time.perf_counter() - started
    await user.aclose()
    return Result(sum(s for s, _ in outcomes), sum(f for _, f in outcomes), CountingModel.requests, seconds)


def measure(base_url: str, episodes: int, turns: int, json_modes: list[str]) -> None:
    pack = gym.make("mimesis/TurtleGym-v0").unwrapped.task_pack
    tasks = [task.id for task in pack.pool("test")]
    work = [(tasks[i % len(tasks)], i) for i in range(episodes)]
    asyncio.run(run(base_url, True, work[:2], 1, 2, "auto"))  # warm-up
    print(f"{'mode':<46} {'steps/s':>8} {'req/step':>9} {'failed':>7} {'steps':>6}")
    for json_mode, concurrency in [(mode, c) for mode in json_modes for c in (1, 16)]:
        subset = work[:4] if concurrency == 1 else work
        results = {}
        for retries in (False, True):  # the same episodes, back to back
            result = asyncio.run(run(base_url, retries, subset, turns, concurrency, json_mode))
            results[retries] = result
            label = f"json_mode {json_mode}, retries {'on ' if retries else 'off'}, {concurrency} at a time"
            print(
                f"{label:<46} {result.steps_per_s:>8.3f} {result.requests / result.steps:>9.2f} "
                f"{result.failed:>7} {result.steps:>6}",
                flush=True,
            )
        on, off = results[True], results[False]
        print(
            f"  on/off at {concurrency}: steps/s {on.steps_per_s / off.steps_per_s:.2f}x, "
            f"failed steps {on.failed} vs {off.failed}"
        )


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
    if args.base_url:
        measure(args.base_url, args.episodes, args.turns, modes)
        return
    from mimesis_gym.users.serve import tiny_server

    python = os.environ.get("MIMESIS_VLLM_PYTHON", str(Path(__file__).resolve().parents[1] / ".venv-vllm/bin/python"))
    with tiny_server(python, log_file=os.devnull) as server:
        server.wait_healthy(timeout_s=600)
        measure(server.command.base_url, args.episodes, args.turns, modes)


if __name__ == "__main__":
    main()
