"""What every ``mimesis-gym`` sub-command shares: exit codes, one-line usage errors, the parser,
argument validators, env names and comma-separated lists (the package docstring lists the exit codes)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.envs import ENV_IDS, ENV_TABLE

__all__ = [
    "EXIT_ALL_USER_FAILURES",
    "EXIT_DISK_FULL",
    "EXIT_RUN_ERRORS",
    "EXIT_USAGE",
    "SKIP_CORRUPT_HELP",
    "OneLineParser",
    "UsageError",
    "check_out_dir",
    "comma_names",
    "conversation_env_id",
    "conversation_env_ids",
    "float_in",
    "int_at_least",
    "parse_assignments",
    "port_number",
    "stderr_line",
    "usage_error",
]

EXIT_USAGE = 2
EXIT_RUN_ERRORS = 3
EXIT_ALL_USER_FAILURES = 4
EXIT_DISK_FULL = 74
"""A run stopped by a full disk (``EX_IOERR`` of sysexits.h): resumable, like an interrupted run."""


class UsageError(ConfigurationError):
    """The command line asks for something that cannot be done; printed as one line, exit 2."""


class OneLineParser(argparse.ArgumentParser):
    """``argparse`` with one-line errors (exit 2), for every sub-command too."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """``argparse``'s, but an unknown flag is reported by the sub-command it was given to, whose
        ``--help`` lists the right flags."""
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            command = getattr(parsed, "command", None)
            subcommands = [a for a in self._actions if isinstance(a, argparse._SubParsersAction)]
            owner = subcommands[0].choices.get(command, self) if subcommands and command else self
            owner.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def int_at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer >= ``minimum``, else a one-line error naming the value."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {value}")
        return value

    return parse


def float_in(low: float, high: float | None = None, *, open_low: bool = False) -> Callable[[str], float]:
    """An argparse ``type``: a finite number from ``low`` (excluded with ``open_low``) up to ``high``."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        too_low = value <= low if open_low else value < low
        if not math.isfinite(value) or too_low or (high is not None and value > high):
            bound = f"> {low:g}" if open_low else f">= {low:g}"
            raise argparse.ArgumentTypeError(
                f"must be a number {bound}{f' and <= {high:g}' if high is not None else ''}, got {text}"
            )
        return value

    return parse


def port_number(text: str) -> int:
    """A TCP port number, 0 (any free port) to 65535."""
    port = int_at_least(0)(text)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"must be a port number from 0 to 65535, got {port}")
    return port


def usage_error(message: str) -> NoReturn:
    """Stop the sub-command with ``message``: one line on stderr, exit 2 (:func:`~mimesis_gym.cli.main`)."""
    raise UsageError(message)


def stderr_line(line: str) -> None:
    """Print ``line`` on stderr: the ``log`` of the runs the sub-commands start."""
    print(line, file=sys.stderr)


def conversation_env_id(name: str) -> str:
    """A conversation env's id from an id or a short name (``function``); :class:`UsageError` naming the known ones."""
    try:
        entry = ENV_TABLE.find(name, listed_kind="conversation")
    except ValueError as error:
        usage_error(str(error))
    if entry.kind != "conversation":
        usage_error(f"{entry.id} is a {entry.kind} env, not a conversation env")
    return entry.id


def conversation_env_ids(spec: str | None) -> list[str]:
    """The env ids of ``--envs`` (comma-separated ids or short names; ``None`` or ``all``: every env)."""
    if spec is None or spec == "all":
        return list(ENV_IDS)
    return [conversation_env_id(part.strip()) for part in spec.split(",") if part.strip()]


def parse_assignments(items: list[str], flag: str, *, scoped: bool) -> dict[str, Any]:
    """``KEY=VALUE`` (or ``ENV.KEY=VALUE`` when ``scoped``) items; values are JSON when they parse as JSON."""
    import json as _json

    parsed: dict[str, Any] = {}
    for item in items:
        target, eq, value = item.partition("=")
        if scoped:
            env, dot, key = target.partition(".")
            if not (eq and dot and env and key):
                usage_error(f"{flag} wants ENV.KEY=VALUE, got {item!r}")
        elif not (eq and target):
            usage_error(f"{flag} wants KEY=VALUE, got {item!r}")
        try:
            decoded = _json.loads(value)
        except ValueError:
            decoded = value
        if scoped:
            parsed.setdefault(env, {})[key] = decoded
        else:
            parsed[target] = decoded
    return parsed


def comma_names(text: str | None) -> list[str] | None:
    """A comma-separated list, stripped, empty parts dropped, duplicates collapsed (first kept)."""
    if text is None:
        return None
    names = list(dict.fromkeys(part.strip() for part in text.split(",") if part.strip()))
    if not names:
        usage_error(f"empty list {text!r}")
    return names


def check_out_dir(out: Any) -> None:
    """Create ``--out`` (and parents) and prove it writable; :class:`UsageError` with the reason otherwise."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / ".write-probe"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as error:
        usage_error(f"--out {out} cannot be used: {error.strerror or error}")


SKIP_CORRUPT_HELP = "skip (and count on stderr) lines of episodes.jsonl that hold no valid record"
