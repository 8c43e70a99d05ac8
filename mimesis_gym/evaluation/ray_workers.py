"""Ray actors that run the evaluation loop on a cluster (docs/evaluation.md, "Concurrency"; extra ``ray``).

Each actor builds one unit player with the callable the runner hands over
(:func:`~mimesis_gym.evaluation.dispatch.json_unit_player`: the users, judges, agents and per-process
share of the limits of a ``--workers`` process) and plays units on its own asyncio loop; this module
knows nothing else of the runner. The coordinator (the caller's process) stays the only writer: it
hands out units pull-style — each actor has ``lanes`` calls in flight and gets the next unit when
one returns — and appends every record as it arrives, so resume and SIGINT behave as in a local run.

Units and records cross the wire as JSON strings (never pickled model output). The actors import
``mimesis_gym`` from the Python environment of the Ray workers, which must have it installed.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from mimesis_gym.core.errors import ConfigurationError

__all__ = ["LOOPBACK_ONLY_VARIABLE", "RAY_MISSING", "check_reachable", "connect", "pin_to_loopback", "run_units_on_ray"]

RAY_MISSING = "`--ray` needs Ray: pip install 'mimesis-gym[ray]'"


def _ray() -> Any:
    try:
        import ray
    except ImportError as error:  # pragma: no cover - exercised only without the extra
        raise RuntimeError(RAY_MISSING) from error
    return ray


CONNECT_TIMEOUT_S = 5.0


def check_reachable(address: str, timeout_s: float = CONNECT_TIMEOUT_S) -> None:
    """``ConfigurationError`` unless something accepts TCP connections at ``host:port`` within ``timeout_s``.

    ``ray.init`` keeps retrying an address where no cluster runs for minutes; this fails at once.
    """
    host, sep, port = address.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ConfigurationError(f"--ray {address!r}: write host:port (e.g. 127.0.0.1:6379), auto or local")
    try:
        with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
            pass
    except OSError as error:
        raise ConfigurationError(
            f"--ray {address}: no Ray cluster answers there ({error.strerror or error}); start one with "
            f"`{LOOPBACK_ONLY_VARIABLE + '=0 ' if _is_loopback(host) else ''}ray start --head --port {port}"
            f"{' --node-ip-address 127.0.0.1' if _is_loopback(host) else ''}` "
            "or drop --ray"
        ) from None


def _is_loopback(host: str) -> bool:
    host = host.strip("[]").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


LOOPBACK_ONLY_VARIABLE = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Ray reads this variable at import: ``0`` makes every node IP it picks itself the loopback address.

On Linux Ray otherwise replaces 127.0.0.1 — even an explicit ``--node-ip-address 127.0.0.1`` — with
the machine's network address, so a "local" cluster would talk over the network interface.
"""


def pin_to_loopback() -> None:
    """Make this process's Ray use 127.0.0.1 as its node IP (set before Ray starts or connects)."""
    os.environ[LOOPBACK_ONLY_VARIABLE] = "0"
    constants = sys.modules.get("ray._private.ray_constants")
    if constants is not None and getattr(constants, "ENABLE_RAY_CLUSTER", False):
        constants.ENABLE_RAY_CLUSTER = False  # Ray was imported before the variable was set


def connect(address: str) -> Any:
    """Connect this process to the Ray cluster at ``address`` (``host:port``, ``auto`` or ``local``).

    A ``host:port`` is checked for a listener first (bounded, :func:`check_reachable`). With a
    loopback host (and with ``local``) this process's node IP is pinned to 127.0.0.1
    (:func:`pin_to_loopback`), so no traffic leaves loopback; start such a head with the same
    variable (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 ray start --head --node-ip-address 127.0.0.1``).
    """
    loopback = address == "local" or _is_loopback(address.rpartition(":")[0])
    if loopback:
        pin_to_loopback()
    ray = _ray()
    if not ray.is_initialized():
        options: dict[str, Any] = {"log_to_driver": False, "include_dashboard": False, "configure_logging": False}
        if address not in ("auto", "local"):
            check_reachable(address)
        if loopback:
            options["_node_ip_address"] = "127.0.0.1"
        ray.init(address=None if address == "local" else address, **options)
    return ray


UnitPlayer = Callable[[str], Awaitable[str]]
"""``play(unit_json) -> record_json``: one episode, from its work unit to its record."""


class EvalActor:
    """One worker: the unit player of a ``--workers`` process, living in a Ray actor.

    ``run`` takes a unit as JSON and returns its episode record as JSON; it is an async method, so
    one actor plays many episodes at once within its share of the limits.
    """

    def __init__(self, make_player: Callable[..., UnitPlayer], player_args: tuple[Any, ...]) -> None:
        self._play = make_player(*player_args)

    async def run(self, unit_json: str) -> str:
        return await self._play(unit_json)


async def run_units_on_ray(
    address: str,
    make_player: Callable[..., UnitPlayer],
    player_args: tuple[Any, ...],
    units: Sequence[str],
    *,
    actors: int,
    lanes: int,
    accept: Callable[[str], Awaitable[bool]],
) -> None:
    """Play ``units`` (JSON) on ``actors`` Ray actors with ``lanes`` calls in flight each.

    Each actor plays with ``make_player(*player_args)``, a module-level function the Ray workers can
    import (it travels by reference) whose JSON arguments are the run's configuration.

    ``accept`` receives each record's JSON as it arrives and returns False to stop handing out
    units (a drain after SIGINT). The actors are killed on the way out, also on cancellation.
    """
    ray = connect(address)
    remote = ray.remote(num_cpus=0, max_concurrency=max(1, lanes) + 1)(EvalActor)
    handles = [remote.remote(make_player, player_args) for _ in range(actors)]
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
