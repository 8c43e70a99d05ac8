"""The OpenAI-compatible HTTP chat model: vLLM servers and API providers (docs/users.md, "An API model").

Built on ``httpx.AsyncClient`` rather than the ``openai`` SDK so that there is exactly one retry
layer (ours, in :class:`~mimesis_gym.core.conventions.BaseChatModel`), raw access to non-standard
fields (``reasoning``, ``reasoning_content``), our own classification of malformed bodies, and
per-attempt total deadlines.

One classification of transport faults serves every caller — the chat path, the agent client and
the ``eval`` pre-flight: :func:`transport_failure` (no HTTP status came back) and
:func:`status_failure` (one did). Each fault is either *persistent* (``config_fault``: refused
connection, unknown host, TLS failure, unusable URL, missing or refused key, unknown model or route)
or *transient* (a kind of :data:`~mimesis_gym.core.conventions.TRANSPORT_KINDS`: a connection reset,
aborted or closed mid-exchange, a timeout, HTTP 429, 5xx, 408/409/425). Until an endpoint has
answered once, a persistent fault makes it unavailable at once, and a transient one that outlasts
every retry makes it unavailable too (:meth:`OpenAIChatModel.gave_up`); once it has answered, both
are retried and then reported as the call's failure.

One pooled client and one semaphore per event loop (a ``WeakKeyDictionary`` keyed by the running
loop): the sync env path runs each env on its own loop and never shares a client across loops.
API keys are read from the environment at each request and are never stored, logged or shown;
they are sent only over https or to loopback hosts (:func:`check_key_transport`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

import httpx
from pydantic import Field, field_validator

from mimesis_gym.core.chat import current_call_context
from mimesis_gym.core.config import TOKENS_PLAUSIBLE, ConfigModel, plausible_up_to
from mimesis_gym.core.conventions import TRANSPORT_KINDS, AttemptError, BaseChatModel, RawCompletion, RetryPolicy
from mimesis_gym.core.errors import AgentUnavailableError, EndpointUnavailableError, UserUnavailableError
from mimesis_gym.core.redact import redact, remember_key_variables

__all__ = [
    "INSECURE_HTTP_VARIABLE",
    "EndpointConfig",
    "EndpointHints",
    "InsecureTransportError",
    "OpenAIChatModel",
    "check_base_url",
    "check_key_transport",
    "is_loopback",
    "status_failure",
    "transport_failure",
]

logger = logging.getLogger(__name__)

_CONTEXT_LENGTH = re.compile(r"context|maximum (?:model |input |sequence )?length|too long", re.IGNORECASE)
_ADAPTABLE = ("seed", "response_format", "temperature")


class EndpointConfig(ConfigModel):
    """Where and how to reach an OpenAI-compatible chat-completions endpoint.

    Every field is serialisable (the timeouts and backoffs finite, :class:`~mimesis_gym.core.config.ConfigModel`);
    the API key itself is never stored, only the names of the variables that hold it (the first one set wins).
    """

    base_url: str = Field(description="server root ending in /v1; requests go to {base_url}/chat/completions")
    model: str = Field(description="served or provider model name")
    api_key_env: list[str] = Field(default_factory=list, description="variables holding the key, first set wins")
    timeout_s: float = Field(120.0, gt=0, description="deadline of one whole attempt")
    connect_timeout_s: float = Field(10.0, gt=0)
    max_retries: int = Field(5, ge=0)
    content_retries: int = Field(2, ge=0)
    content_retry_window: int = Field(
        8,
        ge=0,
        description="stop retrying a content fault for a role once this many retried calls in a row rescued none "
        "(one such call in 32 still retries once to check); 0: always retry",
    )
    backoff_base_s: float = Field(1.0, ge=0)
    backoff_cap_s: float = Field(30.0, ge=0)
    max_concurrency: int = Field(64, ge=1, description="in-flight requests per event loop")
    json_mode: Literal["auto", "on", "off"] = "auto"
    thinking: bool = Field(False, description="a thinking model: JSON is asked by prompt only under json_mode=auto")
    token_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    send_seed: bool = True
    send_temperature: bool = True
    extra_body: dict[str, Any] = Field(default_factory=dict, description="merged into every request body")
    extra_headers: dict[str, str] = Field(default_factory=dict)
    session_header: str = "X-Session-ID"
    refusal_check: bool = True
    max_tokens_ceiling: int = Field(32768, ge=1, json_schema_extra=plausible_up_to(TOKENS_PLAUSIBLE))
    fail_fast: bool = Field(
        True,
        description="raise EndpointUnavailableError until the endpoint has answered once: at a persistent fault "
        "(refused connection, unknown host, TLS failure, missing or refused key, unknown model), and when a transient "
        "one (reset connection, timeout, 429, 5xx) outlasts every retry; False: retry and fall back",
    )

    allow_insecure_http: bool = Field(
        False, description="send the key over plain http to a non-loopback host (or $MIMESIS_ALLOW_INSECURE_HTTP=1)"
    )

    @field_validator("base_url")
    @classmethod
    def _valid_base_url(cls, value: str) -> str:
        return check_base_url(value)


def check_base_url(url: str) -> str:
    """``url`` with its scheme lower-cased, or ``ValueError`` unless it is ``http(s)://host[:port][/path]``."""
    text = url.strip()
    scheme, sep, rest = text.partition("://")
    if not sep:
        raise ValueError(f"base URL {url!r} has no scheme: write http://{text} or https://{text}")
    if scheme.lower() not in ("http", "https"):
        raise ValueError(f"base URL {url!r} must use http:// or https://, not {scheme}://")
    normalised = f"{scheme.lower()}://{rest}"
    parts = urlsplit(normalised)
    try:
        parts.port  # noqa: B018 (validates the port)
    except ValueError:
        raise ValueError(f"base URL {url!r} has an invalid port") from None
    if not parts.hostname:
        raise ValueError(f"base URL {url!r} names no host")
    return normalised


def is_loopback(url: str) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")


@dataclass(frozen=True)
class EndpointHints:
    """What to tell a person whose endpoint is unusable, per cause (see :mod:`mimesis_gym.core.errors`)."""

    connect: str = "check that a server is running at the base URL"
    auth: str = "set the API key variable to a valid key"
    model: str = "check the model name and that the base URL ends in /v1"


INSECURE_HTTP_VARIABLE = "MIMESIS_ALLOW_INSECURE_HTTP"
"""Set to ``1`` to let API keys travel over plain http to non-loopback hosts (a WARNING is logged)."""

_warned_insecure: set[str] = set()


class InsecureTransportError(ValueError):
    """An API key would be sent over plain http to a host that is not loopback."""


def check_key_transport(url: str, allow_insecure_http: bool = False) -> None:
    """Allow sending an API key to ``url`` only over https or to a loopback host.

    Plain http to any other host raises :class:`InsecureTransportError` unless ``allow_insecure_http``
    or ``$MIMESIS_ALLOW_INSECURE_HTTP=1`` opts in; an opted-in ``host:port`` gets one WARNING per process.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != "http" or is_loopback(url):
        return
    host = parts.hostname or url
    if not (allow_insecure_http or os.environ.get(INSECURE_HTTP_VARIABLE, "").lower() in ("1", "true", "yes")):
        raise InsecureTransportError(
            f"refusing to send an API key over plain http to {host}: use https, or opt in with "
            f"{INSECURE_HTTP_VARIABLE}=1 (allow_insecure_http=True for one endpoint)"
        )
    if parts.netloc not in _warned_insecure:
        _warned_insecure.add(parts.netloc)
        logger.warning(
            "sending an API key over plain http to %s (opted in): anyone on the path can read it", parts.netloc
        )


class _LoopState:
    __slots__ = ("client", "semaphore")

    def __init__(self, client: httpx.AsyncClient, semaphore: asyncio.Semaphore) -> None:
        self.client = client
        self.semaphore = semaphore


class OpenAIChatModel(BaseChatModel):
    """A chat model behind ``POST {base_url}/chat/completions``."""

    def __init__(
        self,
        config: EndpointConfig,
        *,
        name: str | None = None,
        retry_policy: RetryPolicy | None = None,
        refusal_patterns: Sequence[str] | None = None,
        party: Literal["user", "judge", "agent"] = "user",
        hints: EndpointHints | None = None,
    ) -> None:
        """``party`` and ``hints`` shape the :class:`EndpointUnavailableError` a persistent fault raises."""
        super().__init__(
            name=name or config.model,
            retry_policy=retry_policy
            or RetryPolicy(
                max_retries=config.max_retries,
                content_retries=config.content_retries,
                content_retry_window=config.content_retry_window,
                backoff_base_s=config.backoff_base_s,
                backoff_cap_s=config.backoff_cap_s,
                max_tokens_ceiling=config.max_tokens_ceiling,
            ),
            refusal_check=config.refusal_check,
            refusal_patterns=refusal_patterns,
        )
        self.config = config
        remember_key_variables(config.api_key_env)
        self.thinking = config.thinking
        self.dropped: list[str] = []
        self._token_param = config.token_param
        self.party = party
        self.hints = hints or EndpointHints()
        self.answered = False
        """Whether the endpoint has answered a request with a 2xx status (persistent faults raise until then)."""
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"OpenAIChatModel(name={self.name!r}, base_url={self.config.base_url!r}, model={self.config.model!r})"

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_loops"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._loops = weakref.WeakKeyDictionary()

    # -- transport -------------------------------------------------------------------------------

    def _state(self) -> _LoopState:
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            limits = httpx.Limits(
                max_connections=self.config.max_concurrency, max_keepalive_connections=self.config.max_concurrency
            )
            timeout = httpx.Timeout(
                connect=self.config.connect_timeout_s,
                read=self.config.timeout_s,
                write=30.0,
                pool=self.config.timeout_s,
            )
            client = httpx.AsyncClient(limits=limits, timeout=timeout, trust_env=False)
            state = _LoopState(client, asyncio.Semaphore(self.config.max_concurrency))
            self._loops[loop] = state
        return state

    def _api_key(self) -> str:
        for variable in self.config.api_key_env:
            value = os.environ.get(variable)
            if value:
                try:
                    check_key_transport(self.config.base_url, self.config.allow_insecure_http)
                except InsecureTransportError as error:
                    raise AttemptError("auth", str(error), config_fault=True) from None
                return value
        if is_loopback(self.config.base_url):
            return "EMPTY"
        names = " or ".join(self.config.api_key_env) or "an api_key_env variable"
        raise AttemptError("auth", f"no API key: set {names} (the endpoint is not on loopback)", config_fault=True)

    def headers(self, attempt: int) -> dict[str, str]:
        """Request headers: auth, the per-episode session header and a correlation id."""
        headers = {"Authorization": f"Bearer {self._api_key()}", **self.config.extra_headers}
        context = current_call_context()
        if context.episode_id is not None:
            headers[self.config.session_header] = context.episode_id
            headers["X-Request-ID"] = f"{context.episode_id}-{context.turn}-{context.role}-{attempt}"
        return headers

    def request_body(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int,
        temperature: float,
        seed: int | None,
        json_schema: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The chat-completions body, minus any field adaptation has dropped.

        With ``json_schema``, ``response_format`` asks for that schema (the server's structured
        output: every key present), or for any JSON object once the server has refused schemas.
        """
        body: dict[str, Any] = {"model": self.config.model, "messages": messages, self._token_param: max_tokens}
        if self.config.send_temperature and "temperature" not in self.dropped:
            body["temperature"] = temperature
        if seed is not None and self.config.send_seed and "seed" not in self.dropped:
            body["seed"] = seed
        body["stream"] = False
        body["n"] = 1
        if json_schema is not None and "response_format" not in self.dropped:
            if "json_schema" in self.dropped:
                body["response_format"] = {"type": "json_object"}
            else:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "reply", "schema": json_schema},
                }
        body.update(self.config.extra_body)
        return body

    async def post(self, body: dict[str, Any], attempt: int = 1) -> dict[str, Any]:
        """POST one chat-completions request; the parsed JSON body, or :class:`AttemptError`.

        A 400 that names an unsupported ``seed``, ``response_format`` or ``temperature``, or asks
        for ``max_completion_tokens``, drops that field for the rest of this client's life and is
        re-sent at once. The whole attempt has a total deadline of ``timeout_s``.

        With ``fail_fast``, a persistent fault met before the endpoint has ever answered raises
        :class:`~mimesis_gym.core.errors.EndpointUnavailableError` instead (see that module).
        """
        try:
            status, payload, headers = await self._exchange(body, attempt)
            if status >= 400:
                raise status_failure(status, payload, headers)
        except AttemptError as error:
            if error.config_fault and self.config.fail_fast and not self.answered:
                raise self.unavailable(error) from None
            raise
        self.answered = True
        try:
            data = json.loads(payload)
        except ValueError:
            shown = redact(repr(payload[:4096]))[:120]  # redacted before the cut: a cut key no longer matches
            raise AttemptError("bad_response", f"body is not JSON: {shown}") from None
        if not isinstance(data, dict):
            raise AttemptError("bad_response", "body is not a JSON object")
        return data

    async def _exchange(self, body: dict[str, Any], attempt: int) -> tuple[int, bytes, httpx.Headers]:
        state = self._state()
        async with state.semaphore:
            while True:
                status, payload, headers = await self._send(state.client, body, attempt)
                if status == 400 and self._adapt(body, payload):
                    continue
                return status, payload, headers

    def unavailable(self, error: AttemptError) -> EndpointUnavailableError:
        """The error that says why this endpoint cannot work: a persistent ``error``, or the last of
        transient faults that every attempt met (see the module's docstring)."""
        if error.kind == "connection" and error.config_fault:
            cause, fix = f"cannot connect ({error.detail})", self.hints.connect
        elif error.kind == "auth" and error.status is None and error.detail.startswith("refusing"):
            cause = "the key would travel over plain http to a host that is not loopback"
            fix = f"use an https:// base URL, or opt in with {INSECURE_HTTP_VARIABLE}=1"
        elif error.kind == "auth" and error.status is None:
            cause, fix = "no API key is set", self.hints.auth
        elif error.kind == "auth":
            cause, fix = f"the server refused the API key (HTTP {error.status})", self.hints.auth
        elif error.kind in TRANSPORT_KINDS:
            cause = f"no request succeeded; last fault: {_transient_cause(error)}"
            fix = _TRANSIENT_FIX[error.kind].format(connect=self.hints.connect)
        else:
            cause, fix = f"HTTP {error.status}: {error.detail}", self.hints.model
        cls = AgentUnavailableError if self.party == "agent" else UserUnavailableError
        return cls(self.name, self.config.base_url, self.config.model, cause, fix, party=self.party)

    def gave_up(self, error: AttemptError) -> None:
        """Called when a call stops retrying after ``error``: raise :meth:`unavailable` when ``error`` is a
        transient transport fault and the endpoint has never answered (with ``fail_fast``)."""
        if error.kind in TRANSPORT_KINDS and self.config.fail_fast and not self.answered:
            raise self.unavailable(error)

    async def _send(
        self, client: httpx.AsyncClient, body: dict[str, Any], attempt: int
    ) -> tuple[int, bytes, httpx.Headers]:
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        headers = self.headers(attempt)

        async def exchange() -> tuple[int, bytes, httpx.Headers]:
            response = await client.post(url, json=body, headers=headers)
            return response.status_code, response.content, response.headers

        try:
            return await asyncio.wait_for(exchange(), timeout=self.config.timeout_s)
        except (asyncio.TimeoutError, httpx.HTTPError) as error:
            raise transport_failure(error, self.config.timeout_s) from None

    def _adapt(self, body: dict[str, Any], payload: bytes) -> bool:
        message = _error_message(payload).lower()
        format_type = (body.get("response_format") or {}).get("type")
        if format_type == "json_schema" and "json_schema" in message and "json_schema" not in self.dropped:
            self.dropped.append("json_schema")
            body["response_format"] = {"type": "json_object"}
            logger.warning("%s: the server rejected JSON schemas; asking for any JSON object instead", self.name)
            return True
        if "max_completion_tokens" in message and self._token_param == "max_tokens":
            if "max_tokens" in self.dropped:
                return False
            self.dropped.append("max_tokens")
            self._token_param = "max_completion_tokens"
            body["max_completion_tokens"] = body.pop("max_tokens")
            logger.warning("%s: the server wants max_completion_tokens; switching for this client", self.name)
            return True
        for field_name in _ADAPTABLE:
            if field_name in body and field_name in message and field_name not in self.dropped:
                if field_name == "temperature" and "unsupported" not in message and "not support" not in message:
                    continue
                self.dropped.append(field_name)
                body.pop(field_name)
                logger.warning("%s: the server rejected %r; dropping it for this client", self.name, field_name)
                return True
        return False

    # -- BaseChatModel hooks ------------------------------------------------------------------

    def _wants_json_mode(self, json_keys: Sequence[str] | None) -> bool:
        if json_keys is None:
            return False
        return self.config.json_mode == "on" or (self.config.json_mode == "auto" and not self.config.thinking)

    def _dropped_params(self) -> tuple[str, ...]:
        return tuple(self.dropped)

    async def _attempt(
        self,
        messages: list[dict[str, Any]],
        max_tokens: int,
        temperature: float,
        seed: int | None,
        json_schema: dict[str, Any] | None,
    ) -> RawCompletion:
        body = self.request_body(messages, max_tokens, temperature, seed, json_schema)
        return parse_completion(await self.post(body))

    async def aclose(self) -> None:
        """Close this loop's client (clients of other, finished loops are dropped); idempotent."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        state = self._loops.pop(loop, None)
        if state is not None:
            await state.client.aclose()


def parse_completion(data: dict[str, Any]) -> RawCompletion:
    """``choices[0].message`` and usage of a chat-completions body."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise AttemptError("bad_response", "no choices in the response")
    message = choices[0].get("message")
    if not isinstance(message, dict):
        raise AttemptError("bad_response", "choices[0] has no message")
    content = message.get("content")
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    elif content is None:
        content = ""
    elif not isinstance(content, str):
        raise AttemptError("bad_response", "message content is neither text nor parts")
    reasoning = message.get("reasoning_content") or message.get("reasoning") or None
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    details = usage.get("completion_tokens_details") if isinstance(usage.get("completion_tokens_details"), dict) else {}
    return RawCompletion(
        text=content,
        reasoning=reasoning if isinstance(reasoning, str) else None,
        finish_reason=choices[0].get("finish_reason"),
        refusal=message.get("refusal") or None,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        reasoning_tokens=int(details.get("reasoning_tokens") or 0),
    )


def _error_message(payload: bytes) -> str:
    """The server's error message, redacted: a server may reflect the key (redacted before any cut)."""
    try:
        data = json.loads(payload)
    except ValueError:
        return redact(payload[:4096].decode("utf-8", "replace"))[:300]
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict):
            return redact(str(error.get("message", error)))
        return redact(str(error))
    return redact(str(data))[:300]


def _retry_after(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        return None


def transport_failure(error: asyncio.TimeoutError | httpx.HTTPError, deadline_s: float) -> AttemptError:
    """The classification of a request that got no HTTP status (the module's docstring has the rule).

    Persistent (``config_fault``): the connection was refused, the host does not resolve, TLS could
    not be set up, or httpx cannot use the URL. Transient: ``timeout`` (no complete answer within
    ``deadline_s``, connecting included) and ``connection`` (reset, aborted, or closed before the
    answer was complete).
    """
    if isinstance(error, (asyncio.TimeoutError, httpx.TimeoutException)):
        return AttemptError("timeout", f"no complete answer within {deadline_s:g}s")
    detail = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    if isinstance(error, (httpx.ConnectError, httpx.UnsupportedProtocol)):  # refused, unknown host, TLS, bad URL
        return AttemptError("connection", detail, config_fault=True)
    return AttemptError("connection", f"the connection was reset or closed ({detail})")


def status_failure(status: int, payload: bytes, headers: httpx.Headers) -> AttemptError:
    """The classification of an HTTP error status (the module's docstring has the rule).

    Transient: 429 (``rate_limited``), 5xx, 408, 409 and 425 (``server_error``), with their
    ``Retry-After``. Persistent: 401/403 (``auth``) and 404 (``client_error``). Neither: a 400 that
    names the context length (``context_length``) and every other 4xx (``client_error``), which fail
    the call without a retry.
    """
    message = _error_message(payload)[:200]
    if status == 429:
        return AttemptError("rate_limited", message, status=status, retry_after=_retry_after(headers))
    if status >= 500 or status in (408, 409, 425):
        return AttemptError("server_error", message, status=status, retry_after=_retry_after(headers))
    if status in (401, 403):
        return AttemptError("auth", f"HTTP {status}", status=status, config_fault=True)
    if status == 400 and _CONTEXT_LENGTH.search(message):
        return AttemptError("context_length", message, status=status)
    return AttemptError("client_error", message, status=status, config_fault=status == 404)


_TRANSIENT_FIX = {
    "connection": "{connect}; something accepts connections there, then drops them: check that it speaks HTTP",
    "timeout": "check the server's load, or raise the endpoint's timeout_s",
    "rate_limited": "the key's rate limit or quota is spent: wait, raise the limit, or lower max_concurrency",
    "server_error": "the server is up but fails every request: check its log",
}
"""What to do when every attempt met a transient fault of this kind (``{connect}``: the alias's hint)."""


def _transient_cause(error: AttemptError) -> str:
    if error.status is not None:
        return f"HTTP {error.status}" + (f": {error.detail}" if error.detail else "")
    return error.detail
