"""How ``eval`` shows its progress (docs/evaluation.md, "Progress"): a bar on a terminal, lines in a log.

On a terminal the runner draws a tqdm bar. When stderr is not a terminal (a log file, a pipe, CI)
a bar would print nothing useful for minutes, so :class:`LineProgress` writes one line per finished
episode instead (env, task, agent, user, status, score, turns, seconds) and a final line with the
counts. ``--no-progress`` silences both.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from typing import Protocol, TextIO

from mimesis_gym.behaviors.registry import CONTROL
from mimesis_gym.core.redact import redact
from mimesis_gym.evaluation.records import EpisodeRecord

__all__ = ["BarProgress", "EpisodeProgress", "LineProgress", "episode_line", "open_progress"]


class EpisodeProgress(Protocol):
    """What the runner calls: once per finished episode, then once at the end (also on a stop)."""

    def finished(self, record: EpisodeRecord) -> None: ...

    def close(self) -> None: ...


def episode_line(record: EpisodeRecord, done: int, total: int) -> str:
    """One finished episode as a log line, e.g. ``episode 3/16: turtle task turtle-0065 · agent oracle · …``
    (a user behaviour other than control named after the user: ``user scripted (B3)``); redacted (an agent
    or user named by its URL may carry a credential)."""
    turns = f"{record.n_turns} turn{'' if record.n_turns == 1 else 's'}"
    behavior = "" if record.user_behavior == CONTROL else f" ({record.user_behavior})"
    return redact(
        f"episode {done}/{total}: {record.env} task {record.task_id} · agent {record.agent} · user {record.user}"
        f"{behavior} · {record.status} · score {record.episode_score:.3f} · {turns} · {record.duration_s:.1f} s"
    )


class LineProgress:
    """One line per finished episode on ``stream`` and a closing line with the counts by status."""

    def __init__(self, total: int, done: int, stream: TextIO) -> None:
        self.total, self.done, self.stream = total, done, stream
        self.start_done = done
        self.statuses: Counter[str] = Counter()
        self.clock = time.perf_counter()

    def finished(self, record: EpisodeRecord) -> None:
        self.done += 1
        self.statuses[record.status] += 1
        print(episode_line(record, self.done, self.total), file=self.stream, flush=True)

    def close(self) -> None:
        counts = ", ".join(f"{status} {n}" for status, n in sorted(self.statuses.items())) or "none ran"
        before = f"; {self.start_done} finished before" if self.start_done else ""
        seconds = time.perf_counter() - self.clock
        print(
            f"episodes: {self.done}/{self.total} finished in {seconds:.1f} s ({counts}{before})",
            file=self.stream,
            flush=True,
        )


class BarProgress:
    """A tqdm bar on ``stream`` (a terminal)."""

    def __init__(self, total: int, done: int, stream: TextIO) -> None:
        from tqdm import tqdm

        self.bar = tqdm(total=total, initial=done, desc="episodes", file=stream)

    def finished(self, record: EpisodeRecord) -> None:
        self.bar.update(1)

    def close(self) -> None:
        self.bar.close()


def open_progress(enabled: bool, total: int, done: int, stream: TextIO | None = None) -> EpisodeProgress | None:
    """A bar when ``stream`` (default stderr) is a terminal, lines otherwise; ``None`` when not ``enabled``."""
    if not enabled:
        return None
    stream = stream or sys.stderr
    return BarProgress(total, done, stream) if stream.isatty() else LineProgress(total, done, stream)
