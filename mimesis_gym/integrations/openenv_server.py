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
"""

from __future__ import annotations

import hmac
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from functools import partial
from typing import Any

from fastapi import FastAPI, WebSocketDisconnect
from openenv.core.env_server import ConcurrencyConfig, HTTPEnvServer

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.evaluation.report_server import is_loopback_host
from mimesis_gym.integrations.episode import EnvRecipe
from mimesis_gym.integrations.openenv import MimesisAction, MimesisObservation, MimesisOpenEnv, user_label

__all__ = ["BearerTokenGate", "QuietDisconnects", "bind_socket", "build_app", "check_bind", "serve"]

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
        elif scope["type"] == "http":
            body = b'{"detail":"missing or wrong bearer token"}'
            headers = [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]
            await send({"type": "http.response.start", "status": 401, "headers": headers})
            await send({"type": "http.response.body", "body": body})
        else:  # closing before accept refuses the handshake (HTTP 403)
            await send({"type": "websocket.close", "code": 1008})


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
    recipe: EnvRecipe, *, max_sessions: int = 64, idle_timeout_s: float | None = 600.0, token: str | None = None
) -> tuple[FastAPI, HTTPEnvServer]:
    """The FastAPI app serving ``recipe`` and OpenEnv's server object (its ``active_sessions``).

    One env is made and closed here, so a recipe whose env cannot be built fails before serving.
    """
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

    app.add_middleware(QuietDisconnects)
    if token is not None:
        app.add_middleware(BearerTokenGate, token=token)
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
) -> None:
    """Serve ``recipe`` until SIGINT/SIGTERM (then return); prints ``serving ... at ws://HOST:PORT`` on stderr.

    Call it from the main thread (it installs a SIGTERM handler while serving).
    """
    import uvicorn

    check_bind(host, allow_remote=allow_remote, token=token)
    app, _ = build_app(recipe, max_sessions=max_sessions, idle_timeout_s=idle_timeout_s, token=token)
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
