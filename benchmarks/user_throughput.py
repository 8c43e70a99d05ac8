"""User throughput against a real vLLM server serving the tiny model, measured side by side.

Three ways of sending the same 64 chat requests (32-token replies, seeds 0..63):
  1. one by one through our client (OpenAIChatModel),
  2. 64 concurrent through our client,
  3. 64 concurrent through bare httpx (the floor: no retries, no conventions).
Prints completion tokens/s and the ratios. Target (issue #3): our client within 5% of bare httpx
at equal concurrency; the bare server gains about 7x from concurrency on 2 cores.

    python benchmarks/user_throughput.py [--base-url URL] [--rounds 3]

Without --base-url it starts `serve-user tiny` with $MIMESIS_VLLM_PYTHON (default .venv-vllm).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

import httpx

from mimesis_gym.core.http import EndpointConfig, OpenAIChatModel

N = 64
MAX_TOKENS = 32
MESSAGES = [{"role": "user", "content": "Tell me a short story about a lighthouse."}]


async def ours_sequential(model: OpenAIChatModel) -> int:
    tokens = 0
    for seed in range(N):
        reply = await model.chat(MESSAGES, max_tokens=MAX_TOKENS, temperature=1.0, seed=seed)
        tokens += reply.usage.completion_tokens
    return tokens


async def ours_concurrent(model: OpenAIChatModel) -> int:
    replies = await asyncio.gather(
        *[model.chat(MESSAGES, max_tokens=MAX_TOKENS, temperature=1.0, seed=seed) for seed in range(N)]
    )
    assert all(reply.failure is None for reply in replies)
    return sum(reply.usage.completion_tokens for reply in replies)


async def bare_concurrent(base_url: str) -> int:
    limits = httpx.Limits(max_connections=N, max_keepalive_connections=N)
    async with httpx.AsyncClient(limits=limits, timeout=120) as client:

        async def one(seed: int) -> int:
            body = {"model": "tiny", "messages": MESSAGES, "max_tokens": MAX_TOKENS, "temperature": 1.0, "seed": seed}
            response = await client.post(f"{base_url}/chat/completions", json=body)
            return response.json()["usage"]["completion_tokens"]

        return sum(await asyncio.gather(*[one(seed) for seed in range(N)]))


def rate(run) -> float:
    started = time.perf_counter()
    tokens = asyncio.run(run())
    return tokens / (time.perf_counter() - started)


def measure(base_url: str, rounds: int) -> None:
    def model() -> OpenAIChatModel:
        return OpenAIChatModel(EndpointConfig(base_url=base_url, model="tiny", max_concurrency=N))

    rate(lambda: ours_concurrent(model()))  # warm-up
    sequential = rate(lambda: ours_sequential(model()))
    ours, bare = [], []
    for _ in range(rounds):  # interleaved, so both see the same machine state
        bare.append(rate(lambda: bare_concurrent(base_url)))
        ours.append(rate(lambda: ours_concurrent(model())))
    ours_med, bare_med = statistics.median(ours), statistics.median(bare)
    print(f"{'mode':<36} {'tokens/s':>9}")
    print(f"{'our client, one by one':<36} {sequential:>9.1f}")
    print(f"{'our client, 64 concurrent':<36} {ours_med:>9.1f}")
    print(f"{'bare httpx, 64 concurrent':<36} {bare_med:>9.1f}")
    print(f"concurrency gain (ours 64 / ours 1): {ours_med / sequential:.2f}x")
    print(f"our client / bare httpx at 64:       {ours_med / bare_med:.3f} (target >= 0.95)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default=os.environ.get("MIMESIS_VLLM_TEST_BASE_URL"))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.base_url:
        measure(args.base_url, args.rounds)
        return
    from mimesis_gym.users.serve import tiny_server

    python = os.environ.get("MIMESIS_VLLM_PYTHON", str(Path(__file__).resolve().parents[1] / ".venv-vllm/bin/python"))
    with tiny_server(python, log_file=os.devnull) as server:
        server.wait_healthy(timeout_s=600)
        measure(server.command.base_url, args.rounds)


if __name__ == "__main__":
    main()
