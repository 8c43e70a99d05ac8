"""Running an env's native async methods from its sync ``reset``/``step`` (docs/env-contract.md, "reset and step").

Two paths:

* A step that makes no chat-model call (scripted roles only) never suspends, so the coroutine is
  driven to completion with a single ``send(None)``: no event loop, microseconds of overhead.
* A step that calls chat models runs on the env's own event loop in a private thread
  (:class:`LoopThread`). Its HTTP clients are created in that loop and stay there, and the sync
  API also works where a loop is already running in the caller's thread (Jupyter, async apps).
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread", "run_without_loop"]

T = TypeVar("T")
_thread_numbers = itertools.count(1)


def run_without_loop(coro: Coroutine[Any, Any, T]) -> T:
    """Drive a coroutine that never suspends; raise ``RuntimeError`` if it tries to."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError(
        "a step without chat models awaited real I/O; scripted roles must not suspend "
        "(use `await env.astep(...)` inside an event loop instead)"
    )


class LoopThread:
    """An event loop running forever in a daemon thread; ``run`` blocks until a coroutine is done."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name=f"mimesis-env-loop-{next(_thread_numbers)}", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    def close(self) -> None:
        """Stop the loop and join its thread; idempotent."""
        if self._loop.is_closed():
            return
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
