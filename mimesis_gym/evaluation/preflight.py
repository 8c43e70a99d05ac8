"""The pre-flight of ``mimesis-gym eval``: every user, judge and agent endpoint probed before episode 1.

A run against a dead endpoint would otherwise spend minutes on retries and then score nothing but
fallback replies. Each HTTP endpoint gets one bounded probe (``GET {base_url}/models`` with the
key, ``timeout_s`` seconds), its faults classified as on every call
(:func:`~mimesis_gym.core.http.transport_failure`, :func:`~mimesis_gym.core.http.status_failure`):
nothing listening, an unknown host, a TLS failure, a missing or refused key, or a server that does
not list the model raises :class:`~mimesis_gym.core.errors.EndpointUnavailableError` with the
alias, URL (credentials redacted), model, cause and fix. A server without a ``/models`` route, or
whose probe met a transient fault (a reset connection, HTTP 429 or 5xx), is probed with a one-token
completion instead; when that fails with a transient fault or a timeout too, no probe succeeded and
the endpoint is unavailable, named with the last fault. Local models are checked for their weights
(the embedded tiny model installed, ``hf:`` paths existing) or their engine (vLLM importable for
``vllm:`` users); scripted users and agents need nothing.

The probes of one run go out concurrently, so the pre-flight takes at most about ``2 * timeout_s``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import httpx

from mimesis_gym.core.conventions import TRANSPORT_KINDS, AttemptError
from mimesis_gym.core.errors import ConfigurationError, EndpointUnavailableError
from mimesis_gym.core.http import OpenAIChatModel, status_failure, transport_failure
from mimesis_gym.core.redact import redact

__all__ = ["PREFLIGHT_TIMEOUT_S", "ProbeResult", "probe_endpoint", "run_preflight"]

PREFLIGHT_TIMEOUT_S = 5.0
SKIP_HINT = "; or skip the pre-flight with --no-preflight"
"""Added to the fix when only transient faults came back: the endpoint may recover by itself."""


@dataclass(frozen=True)
class ProbeResult:
    """One line of the pre-flight: which party and alias, and what the probe found."""

    party: str
    alias: str
    detail: str

    def line(self) -> str:
        """The line to print, redacted (an alias or URL may carry a credential)."""
        return redact(f"pre-flight: {self.party} {self.alias}: {self.detail}")


async def probe_endpoint(model: OpenAIChatModel, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> str:
    """Probe one HTTP endpoint; a short note when usable, else :class:`EndpointUnavailableError`."""
    config = model.config
    url = config.base_url.rstrip("/") + "/models"
    try:
        headers = model.headers(0)
    except AttemptError as error:  # no key for a remote endpoint, or a key that would travel insecurely
        raise model.unavailable(error) from None
    try:
        async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client:
            response = await client.get(url, headers=headers)
    except httpx.HTTPError as error:
        failure = transport_failure(error, timeout_s)
        if failure.config_fault or failure.kind == "timeout":  # a timeout has spent the probe's time
            raise _unavailable(model, failure) from None
        return await _probe_completion(model, timeout_s)
    if response.is_success:
        served = _served_models(response)
        if served is None:
            return f"{config.base_url} answers (no model list)"
        if config.model not in served:
            listed = ", ".join(served[:8]) + (" …" if len(served) > 8 else "")
            raise model.unavailable(
                AttemptError("client_error", f"the server does not serve {config.model!r} (it serves: {listed})",
                             status=404)
            )  # fmt: skip
        return f"{config.base_url} serves {config.model!r}"
    failure = status_failure(response.status_code, response.content, response.headers)
    if failure.kind == "auth":
        raise model.unavailable(failure)
    return await _probe_completion(model, timeout_s)  # no /models route, or a transient fault: ask for one token


def _unavailable(model: OpenAIChatModel, failure: AttemptError) -> EndpointUnavailableError:
    """The endpoint's error for ``failure``; after transient faults its fix also names ``--no-preflight``."""
    error = model.unavailable(failure)
    if failure.config_fault or failure.kind not in TRANSPORT_KINDS:
        return error
    return type(error)(error.alias, error.base_url, error.model, error.cause, error.fix + SKIP_HINT, error.party)


def _served_models(response: httpx.Response) -> list[str] | None:
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        return None
    if not isinstance(data, list):
        return None
    return [str(entry.get("id")) for entry in data if isinstance(entry, dict) and entry.get("id") is not None]


async def _probe_completion(model: OpenAIChatModel, timeout_s: float) -> str:
    """A one-token completion: an answer passes (even a 4xx that is not persistent: the server works);
    a persistent fault, a transient one or no answer within ``timeout_s`` fails it."""
    body = model.request_body([{"role": "user", "content": "ping"}], 1, 0.0, None)
    try:
        await asyncio.wait_for(model.post(body), timeout=timeout_s)
    except EndpointUnavailableError:
        raise
    except AttemptError as error:
        if error.config_fault or error.kind in TRANSPORT_KINDS:
            raise _unavailable(model, error) from None
        return f"{model.config.base_url} answers ({error.kind}: {error.detail[:80]})"
    except asyncio.TimeoutError:
        raise _unavailable(model, transport_failure(asyncio.TimeoutError(), timeout_s)) from None
    finally:
        await model.aclose()
    return f"{model.config.base_url} answers"


def _local_check(party: str, alias: str, model: Any) -> str | None:
    """Local models: the embedded tiny model must be installed (``hf:`` paths were checked), vLLM
    importable for an in-process vLLM model."""
    from mimesis_gym.users.vllm_local import VLLMChatModel, check_vllm_importable

    if isinstance(model, VLLMChatModel):
        check_vllm_importable(alias, model.model)
        return "vLLM importable"
    path = getattr(model, "path", "unset")
    if alias.lower() == "tiny" and path is None:
        from mimesis_gym.core.tiny import TinyModelUnavailable, locate_tiny_gguf

        try:
            locate_tiny_gguf()
        except TinyModelUnavailable as error:
            raise ConfigurationError(f"{party} 'tiny' is unavailable: {error}") from None
        return "embedded model installed"
    return None


def _http_client(model: Any) -> OpenAIChatModel | None:
    if isinstance(model, OpenAIChatModel):
        return model
    client = getattr(model, "client", None) or getattr(model, "model", None)
    return client if isinstance(client, OpenAIChatModel) else None


async def run_preflight(
    parties: Sequence[tuple[str, str, Any]], timeout_s: float = PREFLIGHT_TIMEOUT_S
) -> list[ProbeResult]:
    """Probe every ``(party, alias, model)`` at once; raise the first unusable one's error.

    ``model`` is what the run will use: a chat model, an agent, or ``None`` (scripted). Returns a
    line for each party that had something to probe (scripted ones and custom objects have not).
    """

    async def one(party: str, alias: str, model: Any) -> ProbeResult | None:
        if model is None:
            return None
        client = _http_client(model)
        if client is not None:
            return ProbeResult(party, alias, await probe_endpoint(client, timeout_s))
        note = _local_check(party, alias, model)
        return ProbeResult(party, alias, note) if note else None

    results = await asyncio.gather(*(one(*entry) for entry in parties), return_exceptions=True)
    for result in results:
        if isinstance(result, BaseException):
            raise result
    return [result for result in results if isinstance(result, ProbeResult)]
