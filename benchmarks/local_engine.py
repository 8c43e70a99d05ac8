"""Seconds per turn against turn index for the local engine, KV-cache reuse on and off (docs/users.md, "A local model").

The main job's agent workload: the embedded tiny model, 8 conversations in flight together, 8 turns
of up to 64 tokens each (the demo's caps), greedy. Each conversation has a system prompt of a
demo-like size and a new user message every turn; the model's own replies are fed back, so prompts
grow turn by turn as in real episodes. Both engines see the same token ids (checked). Prints, per
turn index, the wall seconds of the turn (all 8 requests), prompt tokens, and completion tokens per
second, for reuse on and off, and the engine counters. The vLLM-CPU column of issue 17 is not
measured here.

    python benchmarks/local_engine.py [--turns 8] [--batch 8] [--max-tokens 64]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=64)
    args = parser.parse_args()
    from mimesis_gym.core.local_lm import EngineStats, LocalLM
    from mimesis_gym.core.tiny import ensure_tiny_model

    path = str(ensure_tiny_model())
    load = os.getloadavg()
    print(f"cores {os.cpu_count()}, load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    results = {}
    for name, budget in (("reuse off", 0.0), ("reuse on", 2048.0)):
        engine = LocalLM(path, cache_budget_mb=budget)
        engine.load()
        run(engine, 2, 1, 4)  # warm-up: the first engine of a process starts slow
        engine.clear_cache()
        engine.stats = EngineStats()
        seconds, log = run(engine, args.batch, args.turns, args.max_tokens)
        results[name] = (seconds, log, engine.stats)
    on_s, on_log, on_stats = results["reuse on"]
    off_s, off_log, off_stats = results["reuse off"]
    same_ids = sorted((t, i, p, c) for t, i, p, c in on_log) == sorted((t, i, p, c) for t, i, p, c in off_log)
    print(f"same prompt and completion ids with reuse on and off: {same_ids}")
    print("turn | prompt tok (mean) | on s | on tok/s | off s | off tok/s | off/on")
    for turn in range(args.turns):
        rows = [(p, c) for t, _, p, c in on_log if t == turn]
        prompt_mean = sum(len(p) for p, _ in rows) / len(rows)
        completion = sum(len(c) for _, c in rows)
        completion_off = sum(len(c) for t, _, _, c in off_log if t == turn)
        print(
            f"{turn + 1:>4} | {prompt_mean:>17.0f} | {on_s[turn]:>4.1f} | {completion / on_s[turn]:>8.1f} "
            f"| {off_s[turn]:>5.1f} | {completion_off / off_s[turn]:>9.1f} | {off_s[turn] / on_s[turn]:>6.2f}"
        )
    print(f"total: reuse on {sum(on_s):.1f} s, reuse off {sum(off_s):.1f} s")
    print(f"reuse on : {on_stats}")
    print(f"reuse off: {off_stats}")
    return 0 if same_ids else 1


if __name__ == "__main__":
    raise SystemExit(main())
