"""The chat-model protocol shared by every user, judge and agent backend (docs/users.md, "Your own chat model").

A *chat model* is anything with ``async chat(messages, *, max_tokens, temperature, seed,
json_keys=None) -> ChatReply``. ``chat()`` never raises for model or transport problems: every
such problem ends as a :class:`ChatReply` whose ``failure`` names the kind. It raises only for
programming errors, for an endpoint that cannot work as configured
(:class:`~mimesis_gym.core.errors.EndpointUnavailableError`: nothing listens, no key, the key or
the model refused, before the endpoint has ever answered) and propagates
:class:`asyncio.CancelledError`.

The *call context* (:func:`call_context`) tells a chat model which episode, role and turn a call
belongs to without changing the ``chat()`` signature, so third-party implementations keep working.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from mimesis_gym.core.redact import redact
from mimesis_gym.core.text import clean_text

__all__ = [
    "DETAIL_MAX_CHARS",
    "INFO_KINDS",
    "CallContext",
    "ChatFailure",
    "ChatModel",
    "ChatReply",
    "FailureKind",
    "InfoKind",
    "ThoughtRecord",
    "Usage",
    "call_context",
    "current_call_context",
    "info_kind",
]

FailureKind = Literal[
    "timeout",
    "connection",
    "rate_limited",
    "server_error",
    "bad_response",
    "empty",
    "bad_json",
    "refusal",
    "empty_after_think",
    "context_length",
    "auth",
    "client_error",
    "human_quit",
    "exception",
    "invalid_value",
    "step_timeout",
]
"""Fine failure kinds (docs/users.md, "Failure kinds"). Records keep these; ``info`` shows the coarse kind."""

DETAIL_MAX_CHARS = 200
"""The longest :attr:`ChatFailure.detail`."""

InfoKind = Literal["timeout", "http", "refusal", "empty", "bad_json", "invalid_value", "other"]
"""Coarse failure kinds, the only ones that appear in ``info["user_failure"]``."""

INFO_KINDS: dict[str, InfoKind] = {
    "timeout": "timeout",
    "step_timeout": "timeout",
    "connection": "http",
    "rate_limited": "http",
    "server_error": "http",
    "client_error": "http",
    "auth": "http",
    "context_length": "http",
    "bad_response": "http",
    "refusal": "refusal",
    "empty": "empty",
    "empty_after_think": "empty",
    "bad_json": "bad_json",
    "invalid_value": "invalid_value",
    "human_quit": "other",
    "exception": "other",
}


def info_kind(kind: str) -> InfoKind:
    """Map a fine failure kind to the coarse kind used in ``info["user_failure"]``."""
    return INFO_KINDS.get(kind, "other")


@dataclass(frozen=True, slots=True)
class Usage:
    """Token and attempt accounting of one ``chat()`` call (summed over its attempts)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    attempts: int = 0
    latency_s: float = 0.0
    dropped_params: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["dropped_params"] = list(self.dropped_params)
        return data


@dataclass(frozen=True, slots=True)
class ChatFailure:
    """Why a ``chat()`` call produced no usable reply.

    ``detail`` is short and safe to record and print: whatever a backend passes is redacted
    (:func:`~mimesis_gym.core.redact.redact`), made encodable and cut to 200 characters here.
    """

    kind: FailureKind
    detail: str = ""
    attempts: int = 1
    status: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "detail", redact(clean_text(str(self.detail)))[:DETAIL_MAX_CHARS])

    @property
    def info_kind(self) -> InfoKind:
        """The coarse kind shown in ``info["user_failure"]``."""
        return info_kind(self.kind)

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "info_kind": self.info_kind,
            "detail": self.detail,
            "attempts": self.attempts,
            "status": self.status,
        }


@dataclass(frozen=True, slots=True)
class ChatReply:
    """The outcome of one ``chat()`` call.

    ``text`` is the public utterance (think blocks removed, stripped), ``""`` whenever ``failure``
    is set. ``thought`` is the private reasoning, which is privileged. The raw completion is never
    carried: it contains the thought.
    """

    text: str = ""
    thought: str | None = None
    usage: Usage = field(default_factory=Usage)
    failure: ChatFailure | None = None
    _json_cache: Any = field(default=None, init=False, repr=False, compare=False)

    @property
    def ok(self) -> bool:
        return self.failure is None

    def json(self, keys: Sequence[str] | None = None) -> dict[str, Any]:
        """Coerce ``text`` to a JSON object with ``coerce_json``; cached per reply and key set.

        Raises :class:`mimesis_gym.core.jsonfix.JSONCoercionError` when the text holds no object
        with every requested key.
        """
        from mimesis_gym.core.jsonfix import coerce_json

        cache_key = tuple(keys) if keys is not None else None
        cached = self._json_cache
        if cached is not None and cached[0] == cache_key:
            return dict(cached[1])
        data = coerce_json(self.text, keys).data
        object.__setattr__(self, "_json_cache", (cache_key, data))
        return dict(data)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "thought": self.thought,
            "usage": self.usage.to_dict(),
            "failure": self.failure.to_dict() if self.failure else None,
        }


@runtime_checkable
class ChatModel(Protocol):
    """What every user, judge and agent backend implements: ``chat()`` and nothing else required.

    Optional members (looked up with ``getattr``): ``name`` (stable label for records),
    ``is_human`` (a person answers) and ``async aclose()``.
    """

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        json_keys: Sequence[str] | None = None,
    ) -> ChatReply: ...


@dataclass(frozen=True, slots=True)
class ThoughtRecord:
    """One role thought of an episode: privileged, never shown to the agent."""

    turn: int
    role: str
    call_index: int
    thought: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class CallContext:
    """Which episode, role and turn the current role call belongs to."""

    episode_id: str | None
    role: str | None
    turn: int


_CALL_CONTEXT: contextvars.ContextVar[CallContext] = contextvars.ContextVar(
    "mimesis_gym_call_context",
    default=CallContext(episode_id=None, role=None, turn=0),  # noqa: B039 (frozen dataclass)
)


def current_call_context() -> CallContext:
    """The context of the role call in progress; ``episode_id is None`` outside any call."""
    return _CALL_CONTEXT.get()


@contextlib.contextmanager
def call_context(episode_id: str, role: str, turn: int) -> Iterator[CallContext]:
    """Set the role-call context for the duration of one ``chat()`` call.

    Built on :mod:`contextvars`, so it follows asyncio tasks: concurrent episodes on one event
    loop each see their own context.
    """
    context = CallContext(episode_id=episode_id, role=role, turn=turn)
    token = _CALL_CONTEXT.set(context)
    try:
        yield context
    finally:
        _CALL_CONTEXT.reset(token)
