"""Dispatch: the locked run directory's episodes played here, in worker processes or on Ray.

:func:`run_locked` is the body of a run once :func:`~mimesis_gym.evaluation.runner.run_eval` holds
the lock on its directory: ``run.json``, the units still to play, SIGINT/SIGTERM handling, the
coordinator's sink (this process stays the only writer of ``episodes.jsonl``) and the summary. Worker
processes and Ray actors play units through :func:`json_unit_player`, talking JSON only.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import platform
import signal
import sys
import uuid
from collections import defaultdict
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

import mimesis_gym
from mimesis_gym.core.errors import ConfigurationError, EndpointUnavailableError, unavailable_from_dict
from mimesis_gym.evaluation.conditions import ConditionPlan
from mimesis_gym.evaluation.episode import EpisodeRuntime, RunParties
from mimesis_gym.evaluation.plan import EvalConfig, WorkUnit, check_recorded_units_planned
from mimesis_gym.evaluation.progress import EpisodeProgress, open_progress
from mimesis_gym.evaluation.ray_workers import run_units_on_ray
from mimesis_gym.evaluation.records import EpisodeRecord, utc_now
from mimesis_gym.evaluation.rundir import check_resume_overrides, config_fingerprint, stored_config, write_text_atomic
from mimesis_gym.evaluation.sections import Section
from mimesis_gym.evaluation.store import ResultsStore, parse_record, safe_strings, serialise_record, skipped_note
from mimesis_gym.evaluation.summary import summarise_and_write

__all__ = [
    "Interrupted",
    "is_unavailable_payload",
    "json_unit_player",
    "run_locked",
    "unavailable_payload",
    "write_run_json",
]

logger = logging.getLogger(__name__)


class Interrupted(Exception):
    """The run stopped on SIGINT/SIGTERM; finished episodes are recorded, the rest run on resume."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"interrupted by signal {signum}")
        self.signum = signum


def unavailable_payload(error: EndpointUnavailableError) -> str:
    """How a worker tells the coordinator that an endpoint is unusable (JSON, never pickled)."""
    return json.dumps({"unavailable": error.to_dict()})


def is_unavailable_payload(payload: str) -> bool:
    """Whether a worker's reply is :func:`unavailable_payload` rather than a record."""
    return payload.startswith('{"unavailable"')


def write_run_json(out: Path, meta: dict[str, Any]) -> None:
    """``run.json``, written whole or not at all; its strings redacted (argv, config and errors may name a
    spec whose URL holds a credential)."""
    write_text_atomic(out / "run.json", json.dumps(safe_strings(meta), indent=2, sort_keys=True, default=str) + "\n")


def json_unit_player(config_json: str, run_id: str, workers: int) -> Callable[[str], Awaitable[str]]:
    """``play(unit_json) -> record_json`` for a worker process or Ray actor of a run of ``workers``.

    The process's runtime (its share of the limits, the user/judge models, the agents) is built at
    the first call, on the event loop of that call.
    """
    config = EvalConfig.model_validate_json(config_json)
    runtime: EpisodeRuntime | None = None

    async def play(unit_json: str) -> str:
        nonlocal runtime
        if runtime is None:
            runtime = EpisodeRuntime(config, workers)
        try:
            record = await runtime.run(WorkUnit.model_validate_json(unit_json), run_id)
        except EndpointUnavailableError as error:  # the coordinator raises it and stops the run
            return unavailable_payload(error)
        return serialise_record(record)

    return play


def _worker_main(config_json: str, run_id: str, units: Any, results: Any, workers: int) -> None:
    """A worker process: pull units until the sentinel, push each record back as JSON."""
    lanes = max(1, EvalConfig.model_validate_json(config_json).concurrency // workers)
    play = json_unit_player(config_json, run_id, workers)

    async def lane() -> None:
        while True:
            payload = await asyncio.to_thread(units.get)
            if payload is None:
                return
            result = await play(payload)
            await asyncio.to_thread(results.put, result)
            if is_unavailable_payload(result):
                return

    async def loop() -> None:
        await asyncio.gather(*(lane() for _ in range(lanes)))

    asyncio.run(loop())


class _Sink:
    """The coordinator's side of scale-out: append each record from a worker, count it, show the progress."""

    def __init__(
        self, store: ResultsStore, counts: dict[str, int], progress: EpisodeProgress | None, stop: asyncio.Event
    ) -> None:
        self.store, self.counts, self.progress, self.stop = store, counts, progress, stop

    async def accept(self, payload: str) -> bool:
        """Store one record sent as JSON by a worker; False once a drain has been requested.

        A worker that met an unusable endpoint sends :func:`unavailable_payload` instead: raised here.
        """
        if is_unavailable_payload(payload):
            raise unavailable_from_dict(json.loads(payload)["unavailable"])
        return await self.add(parse_record(payload))

    async def add(self, record: EpisodeRecord) -> bool:
        """Store one record; False once a drain has been requested."""
        await self.store.append(record)
        self.counts[record.status] += 1
        if self.progress is not None:
            self.progress.finished(record)
        return not self.stop.is_set()


async def _run_in_workers(config: EvalConfig, todo: Sequence[WorkUnit], run_id: str, sink: _Sink) -> None:
    """Spread units over ``config.workers`` spawned processes; this process stays the only writer."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")
    units, results = context.Queue(), context.Queue()
    for unit in todo:
        units.put(unit.model_dump_json())
    lanes = max(1, config.concurrency // config.workers)
    for _ in range(config.workers * lanes):
        units.put(None)
    processes = [
        context.Process(target=_worker_main, args=(config.model_dump_json(), run_id, units, results, config.workers))
        for _ in range(config.workers)
    ]
    for process in processes:
        process.start()
    finished = False
    try:
        for _ in range(len(todo)):
            if not await sink.accept(await asyncio.to_thread(results.get)):
                break
        finished = not sink.stop.is_set()
    finally:
        for process in processes:
            if not finished:
                process.terminate()
            process.join(timeout=30)


async def _run_on_ray(config: EvalConfig, todo: Sequence[WorkUnit], run_id: str, sink: _Sink) -> None:
    """The same loop in ``config.workers`` Ray actors on the cluster at ``config.ray_address``."""
    await run_units_on_ray(
        config.ray_address or "auto",
        json_unit_player,
        (config.model_dump_json(), run_id, config.workers),
        [unit.model_dump_json() for unit in todo],
        actors=config.workers,
        lanes=max(1, config.concurrency // config.workers),
        accept=sink.accept,
    )


async def run_locked(
    config: EvalConfig,
    out: Path,
    units: list[WorkUnit],
    planned: dict[str, int],
    conditions: ConditionPlan,
    parties: RunParties,
    *,
    resume: bool,
    progress: bool,
    argv: Sequence[str],
    handle_signals: bool,
    drain_timeout: float,
    skip_corrupt: bool,
    log: Callable[[str], None] | None,
) -> tuple[list[Section], dict[str, int]]:
    """Play ``units`` into ``out`` (whose lock the caller holds) and summarise; the contract is
    :func:`~mimesis_gym.evaluation.runner.run_eval`'s, after its pre-flight.

    Writes ``run.json`` (a new run, or a resume checked against the stored config and records), plays
    the units not yet recorded (here, in ``config.workers`` processes or on Ray), appends each record as
    it finishes, then writes the summary and ``run.json``'s final status. SIGINT/SIGTERM (with
    ``handle_signals``) drain and raise :class:`Interrupted`; an unusable endpoint marks the run
    ``failed`` and propagates; an ``OSError`` (a full disk) cancels every episode and propagates.
    """
    stop = asyncio.Event()
    received: list[int] = []
    tasks: list[asyncio.Future[None]] = []

    def on_signal(signum: int) -> None:
        received.append(signum)
        stop.set()
        if len(received) > 1:  # a second signal: cancel at once
            for task in tasks:
                task.cancel()

    store = ResultsStore(out / "episodes.jsonl", skip_corrupt=skip_corrupt)
    config_json = safe_strings(config.model_dump(mode="json"))  # as run.json keeps it: no key, no URL credential
    meta: dict[str, Any]
    if resume:
        check_resume_overrides(stored_config(out), config_json)
        meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
        store.repair()
        meta.setdefault("resumes", [])
    else:
        if (out / "run.json").exists():
            raise ConfigurationError(f"{out} already holds a run; continue it with --resume or use another --out")
        meta = {"schema_version": 1, "run_id": uuid.uuid4().hex, "created_at": utc_now(), "resumes": []}
    meta.update(
        status="running", command=list(argv), config=config_json, config_fingerprint=config_fingerprint(config_json),
        plan={"units": len(units), "tasks": planned, "agents": config.agents, "users": config.users,
              "user_behaviors": config.user_behaviors, "not_applicable": conditions.skipped},
        versions={"mimesis_gym": mimesis_gym.__version__, "python": sys.version.split()[0],
                  "gymnasium": gym.__version__},
        host={"platform": platform.platform(), "cpus": os.cpu_count()},
    )  # fmt: skip
    meta.pop("error", None)
    finished = store.finished_keys()
    if resume:
        check_recorded_units_planned(store.latest(), units, out)
    todo = [unit for unit in units if unit.key not in finished]
    if resume:
        meta["resumes"].append({"at": utc_now(), "skipped": len(units) - len(todo), "run": len(todo)})
        if store.skipped:
            meta["resumes"][-1]["skipped_corrupt_lines"] = list(store.skipped)
            (log or logger.warning)(f"{skipped_note(store.path, store.skipped)}; their episodes play again")
    write_run_json(out, meta)
    if (skipped_pairs := conditions.summary_line()) is not None:
        (log or logger.info)(skipped_pairs)

    loop = asyncio.get_running_loop()
    if handle_signals:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, on_signal, signum)
    bar = open_progress(progress, total=len(units), done=len(units) - len(todo))
    counts: dict[str, int] = defaultdict(int)
    sink = _Sink(store, counts, bar, stop)
    if config.ray_address is not None and todo:
        tasks.append(asyncio.ensure_future(_run_on_ray(config, todo, meta["run_id"], sink)))
    elif config.workers > 1 and todo:
        tasks.append(asyncio.ensure_future(_run_in_workers(config, todo, meta["run_id"], sink)))
    elif todo:
        runtime = EpisodeRuntime(config, workers=1, parties=parties)  # the models play here only in one process

        async def one(unit: WorkUnit) -> None:
            async with runtime.episodes:
                if stop.is_set():
                    return
                record = await runtime.run(unit, meta["run_id"])
            await sink.add(record)

        tasks.extend(asyncio.ensure_future(one(unit)) for unit in todo)
    everything = asyncio.ensure_future(asyncio.gather(*tasks))
    try:
        try:
            stopper = asyncio.ensure_future(stop.wait())
            await asyncio.wait({everything, stopper}, return_when=asyncio.FIRST_COMPLETED)
            stopper.cancel()
            if not everything.done():
                try:
                    await asyncio.wait_for(asyncio.shield(everything), timeout=drain_timeout)
                except (asyncio.TimeoutError, asyncio.CancelledError):
                    await _cancel_all(tasks, everything)
            elif everything.exception() is not None:
                raise everything.exception()  # type: ignore[misc]
        except EndpointUnavailableError as error:
            await _cancel_all(tasks, everything)
            meta.update(status="failed", finished_at=utc_now(), error=str(error))
            write_run_json(out, meta)
            raise
        except OSError:  # e.g. a full disk: stop every episode, then run_eval reports it
            await _cancel_all(tasks, everything)
            raise
        finally:
            if bar is not None:
                bar.close()
        records = list(store.latest().values())
        sections = summarise_and_write(records, planned, config.user_failures, config.judge, out, conditions.skipped)
        totals: dict[str, int] = defaultdict(int)
        for record in records:
            totals[record.status] += 1
        errors = totals.get("agent_error", 0) + totals.get("env_error", 0)
        status = "interrupted" if received else "complete_with_errors" if errors else "complete"
        meta.update(status=status, finished_at=utc_now(), counts=dict(totals))
        write_run_json(out, meta)
    finally:
        if handle_signals:
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(signum)
    if received:
        raise Interrupted(received[0])
    return sections, dict(totals)


async def _cancel_all(tasks: Sequence[asyncio.Future[None]], everything: asyncio.Future[Any]) -> None:
    """Cancel ``tasks`` and wait for them; ``everything`` (their gather) is awaited too, so that its
    ``CancelledError`` counts as retrieved and asyncio prints no "exception was never retrieved"
    traceback after the run's "interrupted" line."""
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.gather(everything, return_exceptions=True)
