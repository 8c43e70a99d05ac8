"""Integration overhead: steps/s of an env driven through an engine adapter vs the same env in process.

docs/integrations.md, "Overhead". Scripted user, 1,000 steps per run (``--steps``), FunctionGym by
default (``--env``; its step is among the cheapest, so an adapter's cost shows most). Each episode
starts from a task id and a seed and runs a fixed cycle of tool calls until the env truncates it.

- ``in-process``: ``gym.make(env_id)``, ``reset(seed, options={"task_id"})``, ``step({"choice", "content"})``.
- ``TRL``: the adapter's environment (``mimesis_gym.integrations.trl``), called as ``GRPOTrainer``
  calls it: ``reset(**row)`` with a dataset row, then ``interact_with_env(choice, content)``.
- ``verl``: the adapter's tool (``mimesis_gym.integrations.verl``, needs verl: run it in .venv-verl),
  called as the ``mimesis_agent`` agent loop calls it inside verl's event loop: ``create`` with a
  row's ``create_kwargs``, ``execute`` per call, ``calc_reward`` and ``release`` at the end.
  Without verl the row is left out (and says so).

- ``OpenEnv``: ``mimesis-gym serve-env`` in its own process, ``--clients`` (16) OpenEnv clients
  (``mimesis_gym.integrations.openenv.MimesisEnvClient``) in this one, over loopback WebSocket,
  sharing the ``--steps``; reported as total steps/s (the goal: at least 1,000) beside in-process.

The adapters build their envs without gymnasium's checker and order-enforcing wrappers (they
enforce the order themselves; ``EnvRecipe.make``), so each adapter row also prints its ratio against
the env called in process with that same wrapper stack: the cost of the adapter's own glue.

The runs alternate (in-process, adapter, in-process, …) and the median of ``--repeats`` runs of
each is compared, so a busy machine slows both alike. Prints steps/s and the ratio
in-process / adapter (the goal: at most 1.1), and ends with one ``report_ratio`` row per adapter and
env (benchmarks/ratios.py; microseconds per step, the adapter's over in-process, so the ratio is that
same in-process / adapter) and one for OpenEnv (no goal of its own there: its goal is the total rate).

    python benchmarks/integration_overhead.py [--env mimesis/FunctionGym-v0|ID,ID|all] [--steps 1000] [--repeats 15]

With several envs (``--env all``: every registered env) it ends with one line per env. The OpenEnv
row runs on the first env.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.util
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
from ratios import load_average, report_ratio

import mimesis_gym  # registers the env ids; ENV_IDS
from mimesis_gym.integrations.episode import EnvRecipe
from mimesis_gym.integrations.trl import environment_factory

CALLS = [
    {"choice": "action", "content": "1 2 3 4"},
    {"choice": "search", "content": "test"},
    {"choice": "action", "content": "could you tell me a bit more?"},
    {"choice": "answer", "content": "12345"},
]
"""A cycle of tool calls; an env that does not accept one answers with its grammar message (still a step)."""

Runner = Callable[[int], None]


def in_process(env_id: str, task_ids: list[str], env: gym.Env | None = None) -> Runner:
    """The env called directly: ``gym.make`` (all of gymnasium's wrappers), or ``env`` when given."""
    env = env if env is not None else gym.make(env_id, split="test")

    def run(steps: int) -> None:
        done, episode = True, 0
        for i in range(steps):
            if done:
                env.reset(seed=episode, options={"task_id": task_ids[episode % len(task_ids)]})
                episode += 1
            _, _, terminated, truncated, _ = env.step(CALLS[i % len(CALLS)])
            done = terminated or truncated

    return run


def in_process_as_adapters_build(env_id: str, task_ids: list[str]) -> Runner:
    """``in_process`` on the env the adapters build (``EnvRecipe.make``: ``TimeLimit`` only, no checker)."""
    return in_process(env_id, task_ids, EnvRecipe(env_id=env_id, env_kwargs={"split": "test"}).make())


def through_trl(env_id: str, task_ids: list[str]) -> Runner:
    environment = environment_factory(env_id, split="test")()
    episode_state = environment.episode

    def run(steps: int) -> None:
        done, episode = True, 0
        for i in range(steps):
            if done:
                environment.reset(prompt=[], task_id=task_ids[episode % len(task_ids)], seed=episode)
                episode += 1
            call = CALLS[i % len(CALLS)]
            environment.interact_with_env(choice=call["choice"], content=call["content"])
            done = episode_state.done

    return run


def drive_verl_tool(tool: Any, env_id: str, task_ids: list[str]) -> Runner:
    """Trajectories through a verl-style tool, as the ``mimesis_agent`` loop calls it: ``create`` with a
    row's ``create_kwargs``, ``execute`` per call, ``calc_reward`` and ``release`` when the episode ends."""

    async def trajectories(steps: int) -> None:
        instance, episode = None, 0
        for i in range(steps):
            if instance is None:
                instance = f"trajectory-{episode}"
                create_kwargs = {"env_id": env_id, "task_id": task_ids[episode % len(task_ids)], "seed": episode}
                await tool.create(instance, create_kwargs=create_kwargs)
                episode += 1
            _, _, metrics = await tool.execute(instance, CALLS[i % len(CALLS)])
            if metrics["terminated"] or metrics["truncated"]:
                await tool.calc_reward(instance)
                await tool.release(instance)
                instance = None
        if instance is not None:
            await tool.release(instance)

    loop = asyncio.new_event_loop()  # one long-lived loop, as verl's agent-loop worker has
    return lambda steps: loop.run_until_complete(trajectories(steps))


def through_verl(env_id: str, task_ids: list[str]) -> Runner:
    from mimesis_gym.integrations.verl import MimesisTool

    tool = MimesisTool({"type": "native", "env_ids": [env_id], "env_kwargs": {"split": "test"}})
    return drive_verl_tool(tool, env_id, task_ids)


def verl_interface_floor(env_id: str, task_ids: list[str]) -> Runner:
    """What verl's tool interface costs with no glue at all: the adapters' env stack behind the same four
    async calls, answering ``ToolResponse`` objects and a metrics dict, with no validation, bookkeeping or
    episode records (one env, one trajectory at a time). The least any verl tool pays."""
    from verl.tools.schemas import ToolResponse

    env = EnvRecipe(env_id=env_id, env_kwargs={"split": "test"}).make()

    class BareTool:
        async def create(self, instance_id: str, create_kwargs: dict[str, Any]) -> tuple[str, ToolResponse]:
            obs, _ = env.reset(seed=create_kwargs["seed"], options={"task_id": create_kwargs["task_id"]})
            return instance_id, ToolResponse(text=obs)

        async def execute(self, instance_id: str, call: dict[str, str]) -> tuple[ToolResponse, float, dict[str, Any]]:
            obs, reward, terminated, truncated, _ = env.step(call)
            return ToolResponse(text=obs), float(reward), {"terminated": terminated, "truncated": truncated}

        async def calc_reward(self, instance_id: str) -> float:
            return 0.0

        async def release(self, instance_id: str) -> None:
            return None

    return drive_verl_tool(BareTool(), env_id, task_ids)


ADAPTERS: dict[str, Callable[[str, list[str]], Runner]] = {"TRL": through_trl, "verl": through_verl}
"""Engine name → the runner that drives the env through its adapter."""


@contextlib.contextmanager
def openenv_server(env_id: str, clients: int) -> Iterator[tuple[str, int]]:
    """``mimesis-gym serve-env env_id`` on a free loopback port in a subprocess; yields its base URL and pid."""
    command = [sys.executable, "-m", "mimesis_gym.cli", "serve-env", env_id, "--port", "0", "--env-arg", "split=test"]
    process = subprocess.Popen([*command, "--max-sessions", str(clients)], stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline() if process.stderr else ""
        match = re.search(r"ws://127\.0\.0\.1:(\d+)", line)
        if not match:
            raise RuntimeError(f"serve-env did not start: {line}")
        yield f"http://127.0.0.1:{match.group(1)}", process.pid
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(30)


@contextlib.contextmanager
def through_openenv(base_url: str, task_ids: list[str], clients: int) -> Iterator[Runner]:
    """``clients`` OpenEnv sessions, connected once, each playing its share of the steps concurrently."""
    from mimesis_gym.integrations.openenv import MimesisEnvClient

    loop = asyncio.new_event_loop()
    sessions = [MimesisEnvClient(base_url) for _ in range(clients)]
    episodes = [0] * clients

    async def gather(*coroutines: Any) -> None:
        await asyncio.gather(*coroutines)

    loop.run_until_complete(gather(*(session.connect() for session in sessions)))

    async def play(index: int, steps: int) -> None:
        client, done = sessions[index], True
        for i in range(steps):
            if done:
                seed = index * 100_000 + episodes[index]
                await client.reset(task_id=task_ids[seed % len(task_ids)], seed=seed)
                episodes[index] += 1
            done = (await client.step(CALLS[i % len(CALLS)])).done

    def run(steps: int) -> None:
        shares = [steps // clients + (i < steps % clients) for i in range(clients)]
        loop.run_until_complete(gather(*(play(i, share) for i, share in enumerate(shares))))

    try:
        yield run
    finally:
        loop.run_until_complete(gather(*(session.close() for session in sessions)))
        loop.close()


def steps_per_second(run: Runner, steps: int) -> float:
    start = time.perf_counter()
    run(steps)
    return steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--env", default="mimesis/FunctionGym-v0", help="an env id, a comma-separated list, or 'all' (every env)"
    )
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--clients", type=int, default=16, help="OpenEnv clients (sessions) sharing the steps")
    args = parser.parse_args()
    load_at_start = load_average()

    env_ids = list(mimesis_gym.ENV_IDS) if args.env == "all" else args.env.split(",")
    summary: dict[str, dict[str, float]] = {}
    for env_id in env_ids:
        task_ids = [task.id for task in gym.make(env_id).unwrapped.task_pack.pool("test")]
        print(f"{env_id}, scripted user, {args.steps} steps per run, median of {args.repeats} runs")
        summary[env_id] = adapter_rows(env_id, task_ids, args.steps, args.repeats, load_at_start)
    if len(env_ids) > 1:
        print_summary(summary)
    if importlib.util.find_spec("openenv") is None:
        print(f"{'OpenEnv':<12} (left out: openenv-core is not installed here; run in the main venv)")
    else:
        task_ids = [task.id for task in gym.make(env_ids[0]).unwrapped.task_pack.pool("test")]
        openenv_row(args, env_ids[0], task_ids, in_process(env_ids[0], task_ids), load_at_start)


def adapter_rows(env_id: str, task_ids: list[str], steps: int, repeats: int, load_at_start: float) -> dict[str, float]:
    """The TRL and verl rows of one env, each also reported as a ratio row; returns in-process / path for each."""
    baseline = in_process(env_id, task_ids)
    ratios: dict[str, float] = {}
    print(f"{'path':<12} {'steps/s':>10} {'in-process / path':>18}")
    for name, make_runner in ADAPTERS.items():
        if name == "verl" and importlib.util.find_spec("verl") is None:
            print(f"{name:<12} (left out: verl is not installed here; run in .venv-verl)")
            continue
        adapter = make_runner(env_id, task_ids)
        same_stack = in_process_as_adapters_build(env_id, task_ids)
        floor = verl_interface_floor(env_id, task_ids) if name == "verl" else None
        for warm in (baseline, adapter, same_stack, floor):  # warm caches and packs
            if warm is not None:
                warm(steps)
        ours, theirs, bare, floors = [], [], [], []
        for _ in range(repeats):
            ours.append(steps_per_second(baseline, steps))
            theirs.append(steps_per_second(adapter, steps))
            bare.append(steps_per_second(same_stack, steps))
            if floor is not None:
                floors.append(steps_per_second(floor, steps))
        base_rate, rate, bare_rate = statistics.median(ours), statistics.median(theirs), statistics.median(bare)
        ratios[name] = base_rate / rate
        verdict = "ok" if base_rate / rate <= 1.1 else "over the 1.1x goal"
        print(f"{'in-process':<12} {base_rate:>10.0f}")
        print(f"{name:<12} {rate:>10.0f} {base_rate / rate:>17.3f}x  ({verdict})")
        glue_us = 1e6 / rate - 1e6 / bare_rate
        print(
            f"{'':<12} against the adapters' own env stack (TimeLimit only, {bare_rate:.0f} steps/s): "
            f"{bare_rate / rate:.3f}x, {glue_us:.1f} us per call of {name} glue"
        )
        if floors:
            floor_rate = statistics.median(floors)
            ratios["verl interface"] = base_rate / floor_rate
            print(
                f"{'':<12} verl's tool interface alone (async calls, ToolResponse, metrics; no glue): "
                f"{floor_rate:.0f} steps/s, {base_rate / floor_rate:.3f}x of in-process; the adapter is "
                f"{floor_rate / rate:.3f}x of it"
            )
        ratios.setdefault("step_us", 1e6 / base_rate)
        report_overhead(f"{name} adapter, {env_id}", ours, theirs, load_at_start, goal=1.1)
    return ratios


def report_overhead(
    comparison: str, in_process_rates: list[float], path_rates: list[float], load_at_start: float, goal: float | None
) -> None:
    """A ratio row in microseconds per step (better lower): the path's over in-process, runs paired for the spread."""
    report_ratio(
        "integration_overhead",
        comparison,
        unit="us/step",
        anchor="in-process env",
        anchor_value=1e6 / statistics.median(in_process_rates),
        project_value=1e6 / statistics.median(path_rates),
        better="lower",
        n=len(path_rates),
        spread=[base / path for base, path in zip(in_process_rates, path_rates, strict=True)],
        goal=goal,
        load_at_start=load_at_start,
    )


def print_summary(summary: dict[str, dict[str, float]]) -> None:
    """One line per env: its in-process step time and in-process / path for each adapter (goal <= 1.1)."""
    paths = [name for name in (*ADAPTERS, "verl interface") if any(name in row for row in summary.values())]
    print(f"\n{'env':<28} {'step (us)':>9} " + " ".join(f"{name:>15}" for name in paths))
    for env_id, row in summary.items():
        cells = " ".join(f"{row[name]:>14.3f}x" if name in row else f"{'-':>15}" for name in paths)
        print(f"{env_id:<28} {row.get('step_us', math.nan):>9.1f} {cells}")
    for name in ADAPTERS:
        within = [env_id for env_id, row in summary.items() if name in row and row[name] <= 1.1]
        if any(name in row for row in summary.values()):
            print(f"{name}: within 1.1x on {len(within)} of {len(summary)} envs")


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``; NaN elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return math.nan
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def openenv_row(
    args: argparse.Namespace, env_id: str, task_ids: list[str], baseline: Runner, load_at_start: float
) -> None:
    """The OpenEnv server over loopback with ``--clients`` sessions: total steps/s (goal >= 1,000).

    Also prints the CPU time per step of the server process and of the clients' process, which
    bound the rate on an idle machine whatever else runs on this one.
    """
    with (
        openenv_server(env_id, args.clients) as (base_url, pid),
        through_openenv(base_url, task_ids, args.clients) as remote,
    ):
        baseline(args.steps), remote(args.steps)  # warm: sessions, packs, connections
        ours, theirs, server_cpu, client_cpu = [], [], 0.0, 0.0
        for _ in range(args.repeats):
            ours.append(steps_per_second(baseline, args.steps))
            server_start, client_start = process_cpu_s(pid), time.process_time()
            theirs.append(steps_per_second(remote, args.steps))
            server_cpu += process_cpu_s(pid) - server_start
            client_cpu += time.process_time() - client_start
    base_rate, rate = statistics.median(ours), statistics.median(theirs)
    verdict = "ok" if rate >= 1000 else "under the 1,000 steps/s goal"
    per_step = 1e6 / (args.steps * args.repeats)
    print(f"{'in-process':<12} {base_rate:>10.0f}")
    print(
        f"{'OpenEnv':<12} {rate:>10.0f} {base_rate / rate:>17.3f}x  ({args.clients} clients over loopback; {verdict})"
    )
    print(f"{'':<12} CPU per step: server {server_cpu * per_step:.0f} us, clients {client_cpu * per_step:.0f} us")
    # no per-call goal: the OpenEnv goal is a total rate (>= 1,000 steps/s), printed above
    report_overhead(f"OpenEnv server, {args.clients} clients, {env_id}", ours, theirs, load_at_start, goal=None)


if __name__ == "__main__":
    main()
