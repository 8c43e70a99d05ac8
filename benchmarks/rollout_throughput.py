"""Rollout throughput: the runner against a real vLLM server (tiny model) as agent and user.

Measured in one run, side by side:
  1. the server's saturated token rate: 64 bare concurrent chat requests (httpx, 32-token replies)
     whose prompts are the agent's opening prompts of the same tasks (system prompt + opening);
  2. 64 IntentionGym episodes through the runner at concurrency 64 (agent and user on the server),
     with every request body the runner sent captured;
  3. the server's saturated rate on exactly that workload: the captured bodies (same prompts, seeds
     and token caps) replayed as bare requests, 64 in flight, with no episode dependencies — the
     ceiling for the runner's own mix of prefill-heavy role calls and growing agent histories;
  4. the same kind of episodes one by one (concurrency 1; a subset, scaled per episode).
Prints episodes/s, completion tokens/s and the ratios. Goal (issue #7): the runner reaches at least
80% of the server's saturated token rate.

    python benchmarks/rollout_throughput.py [--base-url URL] [--episodes 64] [--sequential 4]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import os
import tempfile
import time
from pathlib import Path

import httpx

from mimesis_gym.core.http import OpenAIChatModel
from mimesis_gym.evaluation.runner import EvalConfig, run_eval
from mimesis_gym.evaluation.store import ResultsStore

MAX_TOKENS = 32


def opening_prompts(n: int) -> list[list[dict[str, str]]]:
    """The agent's first prompt of ``n`` IntentionGym train tasks: the same length class as the runner's calls."""
    import gymnasium as gym

    import mimesis_gym  # noqa: F401

    env = gym.make("mimesis/IntentionGym-v0", split="train").unwrapped
    prompts = []
    for task in env.task_pack.pool("train")[:n]:
        env.reset(seed=0, options={"task_id": task.id})
        prompts.append([{"role": "system", "content": env.system_prompt}, *env.opening_messages])
    return prompts


async def saturated_rate(base_url: str, prompts: list[list[dict[str, str]]]) -> float:
    """Completion tokens/s of bare concurrent requests (httpx, no retries, no conventions)."""
    limits = httpx.Limits(max_connections=len(prompts), max_keepalive_connections=len(prompts))
    async with httpx.AsyncClient(limits=limits, timeout=300) as client:

        async def one(seed: int, messages: list[dict[str, str]]) -> int:
            body = {"model": "tiny", "messages": messages, "max_tokens": MAX_TOKENS, "temperature": 1.0, "seed": seed}
            response = await client.post(f"{base_url}/chat/completions", json=body)
            return response.json()["usage"]["completion_tokens"]

        started = time.perf_counter()
        tokens = sum(await asyncio.gather(*[one(seed, m) for seed, m in enumerate(prompts)]))
        return tokens / (time.perf_counter() - started)


async def replay_rate(base_url: str, bodies: list[dict], concurrency: int) -> float:
    """Completion tokens/s of ``bodies`` sent as bare requests, ``concurrency`` in flight."""
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(limits=limits, timeout=300) as client:

        async def one(body: dict) -> int:
            async with gate:
                response = await client.post(f"{base_url}/chat/completions", json=body)
                return response.json()["usage"]["completion_tokens"]

        started = time.perf_counter()
        tokens = sum(await asyncio.gather(*[one(body) for body in bodies]))
        return tokens / (time.perf_counter() - started)


def capturing_requests(bodies: list[dict]):
    """Patch ``OpenAIChatModel.post`` (agent and user calls alike) to keep a copy of every body."""
    original = OpenAIChatModel.post

    async def post(self, body, attempt=1):
        bodies.append(copy.deepcopy(body))
        return await original(self, body, attempt)

    OpenAIChatModel.post = post
    return lambda: setattr(OpenAIChatModel, "post", original)


def runner_rate(base_url: str, episodes: int, concurrency: int) -> tuple[float, float, float]:
    """(episodes/s, completion tokens/s, rollout-phase tokens/s) of IntentionGym episodes through the runner.

    The first two are end to end (``run_eval`` from call to return: plan, episodes, summary files and
    plots); the third counts only the rollout phase, from the call until the last record reached
    disk (the mtime of ``episodes.jsonl``, which is appended and fsynced per record).
    """
    os.environ["MIMESIS_TINY_BASE_URL"] = base_url
    config = EvalConfig(
        envs=["intention"], agents=[f"openai:tiny@{base_url}"], users=["tiny"], split="train", limit=episodes,
        max_turns=3, agent_max_tokens=MAX_TOKENS, role_max_tokens=MAX_TOKENS, concurrency=concurrency,
        agent_concurrency=concurrency, user_concurrency=2 * concurrency,
    )  # fmt: skip
    with tempfile.TemporaryDirectory() as out:
        started, started_wall = time.perf_counter(), time.time()
        asyncio.run(run_eval(config, Path(out), progress=False))
        elapsed = time.perf_counter() - started
        rollout = (Path(out) / "episodes.jsonl").stat().st_mtime - started_wall
        tokens = sum(
            entry.get("completion_tokens", 0)
            for record in ResultsStore(Path(out) / "episodes.jsonl").read()
            for entry in record.usage.values()
        )
    return episodes / elapsed, tokens / elapsed, tokens / rollout


def report(label: str, tokens_per_s: float, episodes_per_s: float | None = None, phase: float | None = None) -> None:
    """Print one measured row as soon as its phase finishes (a killed run still shows what it measured)."""
    eps = f"{episodes_per_s:>10.3f}" if episodes_per_s is not None else f"{'':>10}"
    rollout = f" {phase:>23.1f}" if phase is not None else ""
    print(f"{label:<52} {eps} {tokens_per_s:>9.1f}{rollout}", flush=True)


def measure(base_url: str, episodes: int, sequential: int) -> None:
    print(f"{'mode':<52} {'episodes/s':>10} {'tokens/s':>9} {'rollout-phase tokens/s':>23}", flush=True)
    prompts = opening_prompts(64)
    asyncio.run(saturated_rate(base_url, prompts[:16]))  # warm-up
    saturated = asyncio.run(saturated_rate(base_url, prompts))
    report("server, 64 bare concurrent requests", saturated)
    bodies: list[dict] = []
    restore = capturing_requests(bodies)
    try:
        concurrent_eps, concurrent_tps, concurrent_phase = runner_rate(base_url, episodes, 64)
    finally:
        restore()
    report(f"runner, {episodes} episodes at concurrency 64", concurrent_tps, concurrent_eps, concurrent_phase)
    replayed = asyncio.run(replay_rate(base_url, bodies, 64))
    report(f"server, the runner's {len(bodies)} requests replayed, 64 in flight", replayed)
    one_eps, one_tps, _ = runner_rate(base_url, sequential, 1)
    report(f"runner, {sequential} episodes one by one", one_tps, one_eps)
    print(f"runner at 64 / saturated server (opening prompts), end to end: {concurrent_tps / saturated:.2f}")
    print(f"runner at 64 / saturated server (opening prompts), rollouts:   {concurrent_phase / saturated:.2f}")
    print(f"runner at 64 / saturated server (same {len(bodies)} requests), rollouts: {concurrent_phase / replayed:.2f}"
          " (goal >= 0.80)")  # fmt: skip
    print(f"concurrency speed-up (episodes/s): {concurrent_eps / one_eps:.1f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("MIMESIS_VLLM_TEST_BASE_URL"))
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--sequential", type=int, default=4)
    args = parser.parse_args()
    if args.base_url:
        measure(args.base_url, args.episodes, args.sequential)
        return
    from mimesis_gym.users.serve import tiny_server

    python = os.environ.get("MIMESIS_VLLM_PYTHON", str(Path(__file__).resolve().parents[1] / ".venv-vllm/bin/python"))
    with tiny_server(python, log_file=os.devnull) as server:
        server.wait_healthy(timeout_s=600)
        measure(server.command.base_url, args.episodes, args.sequential)


if __name__ == "__main__":
    main()
