"""The async episode runner: plan, one coroutine per episode, crash-safe records.

The plan and the records: docs/evaluation.md, "Work units and records".

Every (agent, user) pair × env × task × trial is a work unit with a stable key. Episodes run as
asyncio coroutines under separate limits for episodes in flight, agent calls and role calls; each
finished episode is appended and fsynced to ``episodes.jsonl`` at once, so a killed run resumes
without loss (``resume=True`` skips finished keys and repairs a torn last line).

:func:`run_eval` is the entry point; the work is split by job, and every name below stays importable
from here:

- :mod:`~mimesis_gym.evaluation.plan`: the run's config and plan (:class:`EvalConfig`,
  :class:`WorkUnit`, :func:`build_plan`);
- :mod:`~mimesis_gym.evaluation.episode`: the episode loop (one unit to one record) and the run's parties;
- :mod:`~mimesis_gym.evaluation.dispatch`: the locked run (``run.json``, signals, the sink) and its
  worker processes or Ray actors;
- :mod:`~mimesis_gym.evaluation.summary`: scoring records into the summary (:func:`summarise`,
  :func:`report_runs`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

from mimesis_gym.evaluation.dispatch import (
    Interrupted,
    is_unavailable_payload,
    json_unit_player,
    run_locked,
    unavailable_payload,
    write_run_json,
)
from mimesis_gym.evaluation.episode import RunParties
from mimesis_gym.evaluation.plan import (
    RUNNER_ENV_FLAGS,
    RUNNER_ENV_KWARGS,
    EvalConfig,
    WorkUnit,
    build_plan,
    check_env_args,
    check_recorded_units_planned,
    condition_plan,
)
from mimesis_gym.evaluation.records import utc_now
from mimesis_gym.evaluation.rundir import DiskFullError, RunLock, is_disk_full
from mimesis_gym.evaluation.sections import Section
from mimesis_gym.evaluation.summary import all_user_failure_cells, report_runs, summarise

__all__ = [
    "RUNNER_ENV_FLAGS",
    "RUNNER_ENV_KWARGS",
    "EvalConfig",
    "Interrupted",
    "RunParties",
    "WorkUnit",
    "all_user_failure_cells",
    "build_plan",
    "check_env_args",
    "check_recorded_units_planned",
    "condition_plan",
    "is_unavailable_payload",
    "json_unit_player",
    "report_runs",
    "run_eval",
    "summarise",
    "unavailable_payload",
]

logger = logging.getLogger(__name__)


def _stopped_by_full_disk(out: Path, error: OSError) -> DiskFullError:
    """Mark the run ``interrupted`` in ``run.json`` where that can still be written; the one-line error."""
    where = str(error.filename) if error.filename is not None else None
    failed = f"disk full (no space left on device) writing {where or f'into {out}'}"
    if not (out / "run.json").is_file():
        return DiskFullError(
            f"{failed}; run.json could not be written; free space, delete {out} and run again", path=where, marked=False
        )
    status = None
    try:
        meta = json.loads((out / "run.json").read_text(encoding="utf-8"))
        status = meta.get("status")
        meta.update(status="interrupted", finished_at=utc_now(), error=failed)
        write_run_json(out, meta)
        state, marked = "run.json marked interrupted", True
    except (OSError, ValueError):
        state, marked = "run.json could not be updated" + (f" (it still says {status!r})" if status else ""), False
    return DiskFullError(
        f"{failed}; {state}; free space and rerun with --resume (--out {out})", path=where, marked=marked
    )


async def run_eval(
    config: EvalConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    argv: Sequence[str] = (),
    handle_signals: bool = False,
    drain_timeout: float = 60.0,
    preflight: bool = True,
    log: Callable[[str], None] | None = None,
    skip_corrupt: bool = False,
) -> tuple[list[Section], dict[str, int]]:
    """Run (or resume) an evaluation into ``out``; returns the summary sections and status counts.

    Before anything is written, ``preflight`` probes every user, judge and agent endpoint
    (:mod:`~mimesis_gym.evaluation.preflight`) and raises the first unusable one's
    :class:`~mimesis_gym.core.errors.EndpointUnavailableError`. The run holds a lock on ``out``
    while it runs (:class:`~mimesis_gym.evaluation.rundir.RunLock`;
    :class:`~mimesis_gym.evaluation.rundir.RunInUseError` for a second process), and ``run.json``
    stores the config's fingerprint; a resume refuses a config that differs from the stored one
    other than in :data:`~mimesis_gym.evaluation.rundir.RESUME_ADJUSTABLE` settings.

    A resume reads the records already in ``out``: a corrupt line (not a torn last one, which is cut)
    raises :class:`~mimesis_gym.evaluation.store.CorruptRecordError` before anything is written; with
    ``skip_corrupt`` such lines are skipped (their episodes play again), reported through ``log``
    and listed in ``run.json``'s resume entry (``skipped_corrupt_lines``).

    A full disk (``ENOSPC`` on any write: a record, ``run.json``, the summary or ``report.html``) stops
    the run: running episodes are cancelled (not recorded), the record being written is cut back, no
    ``*.tmp`` file is left, ``run.json`` is marked ``interrupted`` where it can still be written, and
    :class:`~mimesis_gym.evaluation.rundir.DiskFullError` says what failed and how to go on
    (``--resume`` once there is space).

    An endpoint that becomes unusable mid-run (one never probed, e.g. with ``preflight=False``)
    stops the run: running episodes are cancelled (not recorded), ``run.json`` gets status
    ``failed`` and the error propagates; ``--resume`` continues once the endpoint is fixed.

    With ``handle_signals``, the first SIGINT/SIGTERM starts no new episode, lets running ones
    finish for up to ``drain_timeout`` seconds, cancels the rest (not recorded), writes the summary
    and ``run.json`` with status ``interrupted`` and raises :class:`Interrupted`; a second signal
    cancels at once. Signals stay handled until ``run.json`` is written.
    """
    units, planned = build_plan(config)
    conditions = condition_plan(config)
    parties = RunParties.build(config)
    if config.ray_address not in (None, "auto", "local"):
        from mimesis_gym.evaluation.ray_workers import check_reachable

        check_reachable(config.ray_address)
    if preflight:
        from mimesis_gym.evaluation.preflight import run_preflight

        for result in await run_preflight(parties.probes()):
            (log or logger.info)(result.line())
    out.mkdir(parents=True, exist_ok=True)
    with RunLock(out):
        try:
            return await run_locked(
                config, out, units, planned, conditions, parties, resume=resume, progress=progress, argv=argv,
                handle_signals=handle_signals, drain_timeout=drain_timeout, skip_corrupt=skip_corrupt, log=log,
            )  # fmt: skip
        except OSError as error:
            if not is_disk_full(error):
                raise
            raise _stopped_by_full_disk(out, error) from error
