"""The exceptions mimesis_gym raises on purpose, under one base class.

Two families:

* **Misconfiguration** (:class:`ConfigurationError`, a ``ValueError``): something the caller wrote is
  wrong — a malformed user or agent spec, an unknown ``user_kwargs`` key, a run directory that
  cannot be used. Raised at construction, before any episode runs.
* **Unavailable endpoints** (:class:`EndpointUnavailableError` and its :class:`UserUnavailableError`
  / :class:`AgentUnavailableError`): a model endpoint that cannot work as configured — nothing
  listens at the URL, the host does not resolve, the key is missing or refused, the server does not
  serve the model — or that has never answered: a transient fault (a reset connection, a timeout,
  HTTP 429 or 5xx) met by every retry of its first call. Raised on the first call that meets the
  fault (and by the ``eval`` pre-flight), never turned into a fallback reply: a run against a dead
  endpoint would score nothing but fallbacks. :mod:`mimesis_gym.core.http` holds the one
  classification. Transient faults in a session that has worked (timeouts, 5xx, malformed bodies,
  refusals) are not errors: they are retried and then reported as ``info["user_failure"]``.

Every message names the alias, the URL and model, the cause and the fix, redacted
(:func:`~mimesis_gym.core.redact.redact`: no key value, no credential inside a URL).
"""

from __future__ import annotations

from typing import Any

from mimesis_gym.core.redact import redact

__all__ = [
    "AgentUnavailableError",
    "ConfigurationError",
    "EndpointUnavailableError",
    "MimesisGymError",
    "UserUnavailableError",
    "unavailable_from_dict",
    "validation_problems",
]


class MimesisGymError(Exception):
    """Base class of every exception mimesis_gym raises deliberately."""


class ConfigurationError(MimesisGymError, ValueError):
    """Something the caller configured is invalid; the message says what and how to fix it."""


class EndpointUnavailableError(MimesisGymError):
    """A model endpoint cannot be used: a persistent fault, or transient ones before it ever answered.

    Attributes: ``party`` (``"user"``, ``"judge"`` or ``"agent"``), ``alias``, ``base_url``,
    ``model``, ``cause`` (what failed) and ``fix`` (what to do about it), each redacted: the error
    is printed, logged and written to ``run.json``.
    """

    party = "endpoint"

    def __init__(self, alias: str, base_url: str, model: str, cause: str, fix: str, party: str | None = None) -> None:
        self.party = party or type(self).party
        self.alias = redact(alias)
        self.base_url = redact(base_url)
        self.model = model
        self.cause = redact(cause)
        self.fix = redact(fix)
        super().__init__(
            f"{self.party} {self.alias!r} is unavailable: {self.cause} (endpoint {self.base_url}, model {model!r}). "
            f"Fix: {self.fix}"
        )

    def __reduce__(self) -> tuple[type, tuple[str, str, str, str, str, str]]:
        return type(self), (self.alias, self.base_url, self.model, self.cause, self.fix, self.party)

    def to_dict(self) -> dict[str, str]:
        """The fields, for crossing a process boundary as JSON (see :func:`unavailable_from_dict`)."""
        return {
            "class": type(self).__name__,
            "party": self.party,
            "alias": self.alias,
            "base_url": self.base_url,
            "model": self.model,
            "cause": self.cause,
            "fix": self.fix,
        }


def unavailable_from_dict(data: dict[str, str]) -> EndpointUnavailableError:
    """Rebuild an :class:`EndpointUnavailableError` sent by a worker process as JSON."""
    classes = {cls.__name__: cls for cls in (EndpointUnavailableError, UserUnavailableError, AgentUnavailableError)}
    cls = classes.get(data.get("class", ""), EndpointUnavailableError)
    return cls(data["alias"], data["base_url"], data["model"], data["cause"], data["fix"], data.get("party"))


class UserUnavailableError(EndpointUnavailableError):
    """The endpoint behind a user (or judge) alias cannot be used."""

    party = "user"


class AgentUnavailableError(EndpointUnavailableError):
    """The endpoint behind an agent alias cannot be used."""

    party = "agent"


def validation_problems(error: Any) -> str:
    """A pydantic ``ValidationError`` as one line for a person: ``field: message; …`` (a model-level
    error: its message alone), without pydantic's "Value error, " prefixes (repeated when one model
    validates another), and "unknown key" for a key the model does not have."""
    problems = []
    for item in error.errors():
        message = "unknown key" if item["type"] == "extra_forbidden" else str(item["msg"])
        while message.startswith("Value error, "):
            message = message.removeprefix("Value error, ")
        where = ".".join(str(part) for part in item["loc"])
        problems.append(f"{where}: {message}" if where else message)
    return "; ".join(problems)
