"""Ray actors that run the evaluation loop on a cluster (evaluation.md §1.3, extra ``ray``).

Each actor holds one :class:`~mimesis_gym.evaluation.runner._Runtime` (users, judges, agents and
the per-process share of the limits) and plays units on its own asyncio loop, exactly like a
``--workers`` process. The coordinator (the caller's process) stays the only writer: it hands out
units pull-style — each actor has ``lanes`` calls in flight and gets the next unit when one returns —
and appends every record as it arrives, so resume and SIGINT behave as in a local run.

Units and records cross the wire as JSON strings (never pickled model output). The actors import
``mimesis_gym`` from the Python environment of the Ray workers, which must have it installed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["RAY_MISSING", "connect", "run_units_on_ray"]

RAY_MISSING = "`--ray` needs Ray: pip install 'mimesis-gym[ray]'"


def _ray() -> Any:
    try:
        import ray
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise RuntimeError(RAY_MISSING) from error
    return ray


def connect(address: str) -> Any:
    """Connect this process to the Ray cluster at ``address`` (``host:port``, ``auto`` or ``local``)."""
    ray = _ray()
    if not ray.is_initialized():
        target = None if address == "local" else address
        ray.init(address=target, log_to_driver=False, include_dashboard=False, configure_logging=False)
    return ray


class EvalActor:
    """One worker: the runtime of a ``--workers`` process, living in a Ray actor.

    ``run`` takes a unit as JSON and returns its episode record as JSON; it is an async method, so
    one actor plays many episodes at once within its share of the limits.
    """

    def __init__(self, config_json: str, run_id: str, workers: int) -> None:
        from mimesis_gym.evaluation.runner import EvalConfig

        self._config = EvalConfig.model_validate_json(config_json)
        self._run_id = run_id
        self._workers = workers
        self._runtime: Any = None  # built on the actor's own event loop, at the first call

    async def run(self, unit_json: str) -> str:
        from mimesis_gym.evaluation.runner import WorkUnit, _Runtime
        from mimesis_gym.evaluation.store import serialise_record

        if self._runtime is None:
            self._runtime = _Runtime(self._config, self._workers)
        record = await self._runtime.run(WorkUnit.model_validate_json(unit_json), self._run_id)
        return serialise_record(record)


async def run_units_on_ray(
    address: str,
    config_json: str,
    run_id: str,
    units: Sequence[str],
    *,
    actors: int,
    lanes: int,
    accept: Callable[[str], Awaitable[bool]],
) -> None:
    """Play ``units`` (JSON) on ``actors`` Ray actors with ``lanes`` calls in flight each.

    ``accept`` receives each record's JSON as it arrives and returns False to stop handing out
    units (a drain after SIGINT). The actors are killed on the way out, also on cancellation.
    """
    ray = connect(address)
    remote = ray.remote(num_cpus=0, max_concurrency=max(1, lanes) + 1)(EvalActor)
    handles = [remote.remote(config_json, run_id, actors) for _ in range(actors)]
    queue: asyncio.Queue[str] = asyncio.Queue()
    for unit in units:
        queue.put_nowait(unit)
    stopped = False

    async def lane(handle: Any) -> None:
        nonlocal stopped
        while not stopped:
            try:
                unit = queue.get_nowait()
            except asyncio.QueueEmpty:
                return
            payload = await handle.run.remote(unit)
            if not await accept(payload):
                stopped = True

    try:
        await asyncio.gather(*(lane(handle) for handle in handles for _ in range(max(1, lanes))))
    finally:
        for handle in handles:
            ray.kill(handle)
