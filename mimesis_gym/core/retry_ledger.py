"""Whether content retries have been rescuing replies (docs/users.md, "What every chat model guarantees").

A retry after a fault of the model's own reply (bad JSON, an empty reply, a refusal, a malformed
body, a reply that was only a thought) costs a whole request. When a model never gets it right —
JSON asked for by the prompt only, from a model that never writes the keys — every retry is wasted
and the requests triple. :class:`RetryLedger` keeps, per role and failure kind, how many *retried
calls* in a row still failed. Once ``window`` such calls have rescued nothing, that kind stops being
retried for that role (one WARNING says so); every ``probe_every``-th call that meets it while
stopped still retries it once (a *probe*), and a probe that rescues the reply resumes the retries
(one INFO line). Transport faults are never tracked: they are always retried.

A call is counted only when it ends as a reply or as a failure of a tracked kind: one that ends on
a transport fault says nothing about whether its content retry would have helped.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["TRACKED_KINDS", "RetryLedger"]

logger = logging.getLogger(__name__)

TRACKED_KINDS = frozenset({"bad_response", "empty", "bad_json", "refusal", "empty_after_think"})
"""The failure kinds whose retries stop when they do not rescue replies: every content retry."""


@dataclass
class _Track:
    unrescued: int = 0
    """Retried calls in a row that still failed."""
    stopped: bool = False
    met_while_stopped: int = 0
    """Calls that met the kind since it stopped being retried (every ``probe_every``-th is a probe)."""


class RetryLedger:
    """Per (role, failure kind) of one chat model: whether retrying that kind still rescues replies.

    ``window`` 0 turns the ledger off (every kind retried as the policy says). Safe to share across
    threads and event loops; picklable (the counts travel, the lock is made anew).
    """

    def __init__(self, window: int = 8, probe_every: int = 32) -> None:
        if window < 0 or probe_every < 1:
            raise ValueError(f"window must be >= 0 and probe_every >= 1, got {window} and {probe_every}")
        self.window = window
        self.probe_every = probe_every
        self._tracks: dict[tuple[str | None, str], _Track] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def stopped(self, role: str | None, kind: str) -> bool:
        """Whether ``kind`` has stopped being retried for ``role``."""
        track = self._tracks.get((role, kind))
        return track is not None and track.stopped

    def grant(self, role: str | None, kind: str) -> int | None:
        """How many retries of ``kind`` a call in ``role`` that has just met it may make.

        ``None``: as many as the retry policy allows; ``1``: a probe; ``0``: none (the kind is stopped).
        Asked once per call and kind.
        """
        if self.window == 0 or kind not in TRACKED_KINDS:
            return None
        with self._lock:
            track = self._tracks.get((role, kind))
            if track is None or not track.stopped:
                return None
            track.met_while_stopped += 1
            return 1 if track.met_while_stopped % self.probe_every == 0 else 0

    def settle(self, name: str, role: str | None, retried: Iterable[str], rescued: bool) -> None:
        """Record one finished call that retried the kinds ``retried``: ``rescued`` when it ended as a reply.

        Stops a kind after ``window`` unrescued calls in a row (one WARNING naming ``name``, the model),
        and resumes it when a probe rescues (one INFO line).
        """
        if self.window == 0:
            return
        for kind in retried:
            if kind not in TRACKED_KINDS:
                continue
            with self._lock:
                track = self._tracks.setdefault((role, kind), _Track())
                changed = self._count(track, rescued)
            if changed and track.stopped:
                logger.warning(
                    "%s: retries after %s rescued none of the last %d retried calls of role %s; %s is no "
                    "longer retried for this role (one such call in %d still retries once to check; "
                    "content_retry_window=0 keeps retrying)",
                    name,
                    kind,
                    self.window,
                    role,
                    kind,
                    self.probe_every,
                )
            elif changed:
                logger.info(
                    "%s: a retry after %s rescued a reply of role %s again; retrying it again", name, kind, role
                )

    def _count(self, track: _Track, rescued: bool) -> bool:
        """Update ``track`` with one call's outcome; whether it stopped or resumed."""
        if rescued:
            track.unrescued = 0
            resumed = track.stopped
            track.stopped = False
            track.met_while_stopped = 0
            return resumed
        track.unrescued += 1
        if not track.stopped and track.unrescued >= self.window:
            track.stopped = True
            return True
        return False
