"""The OpenEnv server of an env recipe: ``mimesis-gym serve-env`` (docs/integrations.md, "OpenEnv").

:func:`build_app` puts :class:`~mimesis_gym.integrations.openenv.MimesisOpenEnv` behind OpenEnv's
``HTTPEnvServer`` in its production mode: ``/ws`` (one env per WebSocket session, made when the
connection opens and closed when it ends, also by a disconnect), ``/health``, ``/schema``,
``/metadata`` and ``/sessions`` (the count of open sessions). OpenEnv's stateless HTTP
``/reset`` and ``/step`` (a throwaway env per request) are left out: an episode lives in a session.
Sessions idle longer than ``idle_timeout_s`` are closed by OpenEnv's reaper (it looks every
``max(idle_timeout_s / 4, 5)`` seconds).

Security defaults (:func:`check_bind`): the server binds to loopback; another interface needs
``allow_remote`` and a token. With a token every HTTP request and WebSocket handshake must carry
``Authorization: Bearer <token>`` (compared in constant time); others get 401 (HTTP) or a refused
handshake (WebSocket) before any env is made.

Web pages (:class:`OriginGate`): a request that carries an ``Origin`` header (browsers add one to
every WebSocket handshake and cross-site request) is served only when that origin's host is a
loopback name or the served host, or the origin is one of ``allowed_origins`` (``--allow-origin``);
others get 403 (HTTP) or a refused handshake, so a page open in a browser on this machine or behind
the SSH tunnel cannot run episodes (and spend a paid user model's budget). Requests without an
``Origin`` (OpenEnv's Python client, curl) are not affected. This holds with or without a token.

Frames (:class:`ProtocolFrames`): on ``/ws`` a binary frame or a JSON text frame that is not an
object (``[1, 2]``, ``"x"``, ``7``) is answered with the protocol's error message
(``{"type": "error", "data": {"message": ..., "code": "INVALID_JSON"}}``; on ``/mcp`` a JSON-RPC
error) and the session stays open for the next message, as OpenEnv does for text that is not JSON.
"""

from __future__ import annotations

import hmac
import json
import logging
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, Iterable, MutableMapping, Sequence
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from fastapi import FastAPI, WebSocketDisconnect
from openenv.core.env_server import (
    ConcurrencyConfig,
    HTTPEnvServer,
    JsonRpcErrorCode,
    JsonRpcResponse,
    WSErrorCode,
    WSErrorResponse,
)

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.evaluation.report_server import authority_host, is_loopback_host, is_served_host
from mimesis_gym.integrations.episode import EnvRecipe
from mimesis_gym.integrations.openenv import MimesisAction, MimesisObservation, MimesisOpenEnv, user_label

__all__ = [
    "BearerTokenGate",
    "OriginGate",
    "ProtocolFrames",
    "QuietDisconnects",
    "bind_socket",
    "build_app",
    "check_bind",
    "normalize_origin",
    "serve",
]

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


def check_bind(host: str, *, allow_remote: bool, token: str | None) -> None:
    """Refuse a non-loopback ``host`` without ``allow_remote``, and ``allow_remote`` without a token."""
    if not is_loopback_host(host) and not allow_remote:
        raise ConfigurationError(
            f"--host {host} is not a loopback address: anyone who reaches it could run episodes; "
            "bind to 127.0.0.1 (and use an SSH tunnel), or pass --allow-remote with --token-env VAR"
        )
    if allow_remote and not token:
        raise ConfigurationError(
            "--allow-remote needs an auth token: put one in an environment variable and pass --token-env VAR"
        )


class BearerTokenGate:
    """ASGI middleware: only requests and WebSocket handshakes carrying ``Authorization: Bearer <token>`` pass."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], token: str) -> None:
        if not token:
            raise ConfigurationError("the auth token is empty")
        self.app = app
        self._expected = f"Bearer {token}".encode()

    def allowed(self, scope: Scope) -> bool:
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                return hmac.compare_digest(value, self._expected)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or self.allowed(scope):
            await self.app(scope, receive, send)
        else:
            await _refuse(scope, send, 401, "missing or wrong bearer token", [(b"www-authenticate", b"Bearer")])


async def _refuse(
    scope: Scope, send: Send, status: int, detail: str, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer an HTTP request with ``status`` and ``{"detail": detail}``, or refuse a WebSocket handshake
    (closing before accept answers HTTP 403)."""
    if scope["type"] == "http":
        body = json.dumps({"detail": detail}).encode()
        start = {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), *headers],
        }
        await send(start)
        await send({"type": "http.response.body", "body": body})
    else:
        await send({"type": "websocket.close", "code": 1008})


_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(text: str) -> str | None:
    """``scheme://host[:port]`` as browsers send it in ``Origin`` (lower-case, default port dropped,
    IPv6 in brackets), or ``None`` when ``text`` is not an http(s) origin (``null``, a path, userinfo)."""
    parts = urlsplit(text.strip())
    if parts.scheme not in _DEFAULT_PORTS or parts.path not in ("", "/") or parts.query or parts.fragment:
        return None
    host = authority_host(parts.netloc)
    try:
        port = parts.port
    except ValueError:
        return None
    if host is None:
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}" + ("" if port in (None, _DEFAULT_PORTS[parts.scheme]) else f":{port}")


def allowed_origin_list(values: Iterable[str]) -> frozenset[str]:
    """The ``--allow-origin`` values (each may hold several, comma-separated), normalized.

    :class:`ConfigurationError` naming a value that is not ``http(s)://host[:port]``.
    """
    origins = set()
    for value in values:
        for item in filter(None, (part.strip() for part in value.split(","))):
            origin = normalize_origin(item)
            if origin is None:
                raise ConfigurationError(
                    f"--allow-origin {item!r} is not a web origin; write scheme://host[:port], "
                    "e.g. --allow-origin http://localhost:3000"
                )
            origins.add(origin)
    return frozenset(origins)


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return value.decode("latin-1")
    return None


class OriginGate:
    """ASGI middleware: requests from a web page of a foreign origin are refused (module docstring).

    Same-origin: the ``Origin`` host is a loopback name or ``host`` (the served address; on a
    wildcard address only loopback names). ``allowed`` holds further origins, as
    :func:`normalize_origin` writes them. No ``Origin`` header: not a browser, let through.
    """

    def __init__(
        self, app: Callable[[Scope, Receive, Send], Awaitable[None]], host: str, allowed: frozenset[str] = frozenset()
    ) -> None:
        self.app = app
        self.host = host
        self.allowed = allowed

    def allowed_origin(self, origin: str) -> bool:
        """Whether a request with ``Origin: origin`` is served (same-origin or allowed)."""
        normalized = normalize_origin(origin)
        if normalized is None:
            return False
        host = urlsplit(normalized).hostname or ""
        return normalized in self.allowed or is_served_host(host, self.host, ip_on_wildcard=False)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        origin = _header(scope, b"origin") if scope["type"] in ("http", "websocket") else None
        if origin is None or self.allowed_origin(origin):
            await self.app(scope, receive, send)
            return
        logger.warning("refused a request from the web page origin %r (allow it with --allow-origin)", origin)
        await _refuse(scope, send, 403, "requests from this web page origin are refused (serve-env --allow-origin)")


_JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}
_JSON_KINDS[type(None)] = "null"


def _frame_problem(message: Message) -> str | None:
    """What a received WebSocket frame is when it is not a message OpenEnv can read (``"a binary
    frame"``, ``"an array"``, …), or ``None``.

    Text that is not JSON at all is left to OpenEnv (it answers ``INVALID_JSON`` itself); an object
    (text starting with ``{``) is never parsed twice.
    """
    text = message.get("text")
    if text is None:
        return "a binary frame"
    if text.lstrip().startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return _JSON_KINDS.get(type(value), "a JSON value")


def _ws_error(kind: str) -> str:
    message = f"Invalid message: expected a JSON object with a 'type' (reset, step, state, close) as text; got {kind}"
    return WSErrorResponse(data={"message": message, "code": WSErrorCode.INVALID_JSON}).model_dump_json()


def _mcp_error(kind: str) -> str:
    message = f"Invalid request: expected a JSON-RPC request object as text; got {kind}"
    return JsonRpcResponse.error_response(JsonRpcErrorCode.INVALID_REQUEST, message).model_dump_json()


_FRAME_ERRORS: dict[str, Callable[[str], str]] = {"/ws": _ws_error, "/mcp": _mcp_error}


class ProtocolFrames:
    """ASGI middleware: frames OpenEnv would answer with Python internals get a protocol error instead.

    A binary frame, or JSON text that is not an object, on ``/ws`` (or ``/mcp``) is answered with
    that endpoint's error message and not passed on; the session keeps serving the next frame.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        error = _FRAME_ERRORS.get(scope.get("path", "")) if scope["type"] == "websocket" else None
        if error is None:
            await self.app(scope, receive, send)
            return

        async def checked_receive() -> Message:
            while True:
                message = await receive()
                kind = _frame_problem(message) if message["type"] == "websocket.receive" else None
                if kind is None:
                    return message
                await send({"type": "websocket.send", "text": error(kind)})

        await self.app(scope, checked_receive, send)


class QuietDisconnects:
    """ASGI middleware: a WebSocket whose client already left ends quietly.

    OpenEnv's ``/ws`` handler closes the socket after its session ends; when the client vanished
    first, that close raises ``WebSocketDisconnect``, which uvicorn would log as an application
    error on every dropped connection. The session itself is already cleaned up by then.
    """

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except WebSocketDisconnect:
            if scope["type"] != "websocket":
                raise


def build_app(
    recipe: EnvRecipe,
    *,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    token: str | None = None,
    host: str = "127.0.0.1",
    allowed_origins: Iterable[str] = (),
) -> tuple[FastAPI, HTTPEnvServer]:
    """The FastAPI app serving ``recipe`` and OpenEnv's server object (its ``active_sessions``).

    ``host`` is the address served (web pages from it or a loopback name are same-origin) and
    ``allowed_origins`` the ``--allow-origin`` values (:func:`allowed_origin_list`). One env is made
    and closed here, so a recipe whose env cannot be built fails before serving.
    """
    origins = allowed_origin_list(allowed_origins)
    if max_sessions < 1:
        raise ConfigurationError(f"max_sessions must be >= 1; got {max_sessions}")
    if idle_timeout_s is not None and idle_timeout_s <= 0:
        raise ConfigurationError(f"idle_timeout_s must be > 0 or None; got {idle_timeout_s}")
    MimesisOpenEnv(recipe).close()
    server = HTTPEnvServer(
        partial(MimesisOpenEnv, recipe),
        MimesisAction,
        MimesisObservation,
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=max_sessions, session_timeout=idle_timeout_s),
    )
    app = FastAPI(title=f"mimesis_gym {recipe.env_id} (OpenEnv)", docs_url=None, redoc_url=None, openapi_url=None)
    server.register_routes(app, mode="production")

    @app.get("/sessions")
    def sessions() -> dict[str, int]:
        return {"active_sessions": server.active_sessions, "max_sessions": server.max_concurrent_envs}

    app.add_middleware(ProtocolFrames)
    app.add_middleware(QuietDisconnects)
    if token is not None:
        app.add_middleware(BearerTokenGate, token=token)
    app.add_middleware(OriginGate, host=host, allowed=origins)
    return app, server


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (0: any free port); :class:`ConfigurationError` if it cannot bind."""
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(info[4])
    except OSError as error:
        raise ConfigurationError(f"cannot listen on {host}:{port} ({error}); pick another --port") from None
    sock.listen(2048)
    return sock


def serve(
    recipe: EnvRecipe,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    allow_remote: bool = False,
    token: str | None = None,
    max_sessions: int = 64,
    idle_timeout_s: float | None = 600.0,
    allowed_origins: Iterable[str] = (),
) -> None:
    """Serve ``recipe`` until SIGINT/SIGTERM (then return); prints ``serving ... at ws://HOST:PORT`` on stderr.

    Call it from the main thread (it installs a SIGTERM handler while serving).
    """
    import uvicorn

    check_bind(host, allow_remote=allow_remote, token=token)
    app, _ = build_app(
        recipe,
        max_sessions=max_sessions,
        idle_timeout_s=idle_timeout_s,
        token=token,
        host=host,
        allowed_origins=allowed_origins,
    )
    sock = bind_socket(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    print(
        f"serving {recipe.env_id} (user {user_label(recipe)}) over OpenEnv at ws://{shown}:{bound} "
        f"(max {max_sessions} sessions{', bearer token required' if token else ''}; Ctrl-C to stop)",
        file=sys.stderr,
        flush=True,
    )
    # Messages are short JSON: per-message compression would cost more CPU than it saves.
    config = uvicorn.Config(
        app, log_level="warning", ws_max_size=1 << 20, ws_per_message_deflate=False, timeout_graceful_shutdown=5
    )
    # uvicorn shuts down gracefully on SIGINT/SIGTERM and then re-raises the signal; both end here.
    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def interrupt(signum: int, frame: Any) -> None:
    """A SIGTERM handler that stops like Ctrl-C."""
    raise KeyboardInterrupt
