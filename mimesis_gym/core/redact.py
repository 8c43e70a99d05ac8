"""Secret redaction: the one function every error text, log line and printed detail goes through.

A server may reflect the request's ``Authorization`` header in its error body ("internal error for
Bearer sk-…"). :func:`redact` removes from a text

- the value of every *key variable*: each variable named in an
  :class:`~mimesis_gym.core.http.EndpointConfig`'s ``api_key_env`` (or ``serve-user --api-key-env``)
  once a client for it has been built (:func:`remember_key_variables`), and every variable of
  ``os.environ`` whose name ends in ``API_KEY`` (``OPENAI_API_KEY``, ``MIMESIS_USER_<KEY>_API_KEY``,
  ``MIMESIS_AGENT_<KEY>_API_KEY``, ``VLLM_API_KEY``, ``SERPER_API_KEY``, …), read when it is called;
- the user-info of every URL, always: ``http://user:secret@host/v1`` becomes ``http://***@host/v1``
  (a base URL may carry a credential; the marker :data:`URL_CREDENTIAL` keeps the URL parseable);
- with ``tokens=True`` (the default), text shaped like a credential: ``Bearer <token>``,
  ``sk-<token>`` and ``api_key=<value>`` / ``X-API-KEY: <value>``.

Values shorter than :data:`MIN_SECRET_CHARS` characters are not treated as keys (a real key is
longer, and scrubbing short words would mangle ordinary text). Every other removed text becomes
:data:`REDACTED`.

:func:`install_log_redaction` makes every log record of the ``mimesis_gym`` loggers pass through
:func:`redact` (message, arguments and traceback) before any handler sees it.
"""

from __future__ import annotations

import logging
import os
import re
import threading
import traceback
from collections.abc import Iterable, Sequence
from typing import Any

__all__ = [
    "MIN_SECRET_CHARS",
    "REDACTED",
    "URL_CREDENTIAL",
    "has_redacted_url_credential",
    "install_log_redaction",
    "key_variables",
    "redact",
    "redact_url_credentials",
    "remember_key_variables",
    "secret_values",
]

REDACTED = "[REDACTED]"
MIN_SECRET_CHARS = 8
URL_CREDENTIAL = "***"
"""What a URL's user-info becomes (``[REDACTED]`` there would read as an IPv6 host to ``urlsplit``)."""

_URL_USERINFO = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]*://)[^\s/?#]*@")
"""``scheme://`` and the user-info up to the authority's last ``@`` (a raw ``@`` may sit in a password)."""

_TOKEN_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(bearer)(\s+)[A-Za-z0-9._~+/=-]{4,}", re.IGNORECASE), rf"\1\2{REDACTED}"),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"), REDACTED),
    (
        re.compile(r"""\b((?:x-)?api[_-]?key["']?\s*[:=]\s*["']?)[^\s"',;}]{4,}""", re.IGNORECASE),
        rf"\1{REDACTED}",
    ),
)

_remembered: set[str] = set()
_lock = threading.Lock()


def remember_key_variables(names: Iterable[str]) -> None:
    """Treat the values of the variables ``names`` as secrets from now on (in this process)."""
    with _lock:
        _remembered.update(name for name in names if name)


def key_variables() -> list[str]:
    """Every variable whose value is a secret: the remembered ones and ``*API_KEY`` in the environment."""
    with _lock:
        names = set(_remembered)
    names.update(name for name in os.environ if name.upper().endswith("API_KEY"))
    return sorted(names)


def secret_values() -> tuple[str, ...]:
    """The current values of :func:`key_variables` of at least :data:`MIN_SECRET_CHARS` characters,
    longest first (so a key that contains another is removed whole)."""
    values = {os.environ.get(name, "") for name in key_variables()}
    return tuple(sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=len, reverse=True))


def redact(text: str, *, tokens: bool = True, values: Sequence[str] | None = None) -> str:
    """``text`` with every secret value (and, with ``tokens``, credential-shaped token) replaced.

    ``values`` are the secret values to remove (default :func:`secret_values`, read now); pass them
    when redacting many strings at once. Redact *before* truncating a text, never after: a cut key
    no longer matches.
    """
    if not text:
        return text
    for value in secret_values() if values is None else values:
        if value in text:
            text = text.replace(value, REDACTED)
    text = redact_url_credentials(text)
    if tokens:
        for pattern, replacement in _TOKEN_PATTERNS:
            text = pattern.sub(replacement, text)
    return text


def redact_url_credentials(text: str) -> str:
    """``text`` with the user-info of every ``scheme://user:secret@host`` URL replaced by :data:`URL_CREDENTIAL`.

    Depends on nothing but ``text`` (unlike :func:`redact`, which also reads the environment), so it
    may shape identities: a run's unit keys hold specs this way. Idempotent.
    """
    return _URL_USERINFO.sub(rf"\1{URL_CREDENTIAL}@", text) if "@" in text else text


def has_redacted_url_credential(text: str) -> bool:
    """Whether ``text`` holds a URL whose user-info :func:`redact` replaced (its credential is gone)."""
    return f"://{URL_CREDENTIAL}@" in text


# --------------------------------------------------------------------------------------------- logging

_installed = False


def _redact_record(record: logging.LogRecord) -> None:
    try:
        message = record.getMessage()
    except Exception:  # a malformed format string: leave it to the handler's own error path
        return
    record.msg, record.args = redact(message), None
    if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
        record.exc_text = redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))


def install_log_redaction(prefix: str = "mimesis_gym") -> None:
    """Redact every log record of the loggers ``prefix`` and ``prefix.*`` when it is created.

    Installed as a wrapper of the log-record factory (idempotent), because a filter on the package
    logger is not consulted for records of its child loggers.
    """
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        if record.name == prefix or record.name.startswith(prefix + "."):
            _redact_record(record)
        return record

    logging.setLogRecordFactory(factory)
