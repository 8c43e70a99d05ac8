"""``mimesis-gym view RUN_DIR``: serve a run's ``report.html`` over HTTP (docs/evaluation.md, "The report page").

For a run on a remote machine: ``view`` listens on 127.0.0.1 and the reader opens an SSH tunnel
(``ssh -L 8765:127.0.0.1:8765 host``). Only the page is served — ``/`` and ``/report.html``,
read afresh at each request so that a rewritten report shows on reload; every other path is 404,
so the records and ``run.json`` beside it are not exposed. A host that is not a loopback address
is refused unless ``allow_remote`` is set (anyone who can reach the port can then read the run).
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.evaluation.html_report import REPORT_NAME

__all__ = ["ReportServer", "is_loopback_host", "make_report_server"]

logger = logging.getLogger(__name__)

SERVED_PATHS = frozenset({"/", "/" + REPORT_NAME})


def is_loopback_host(host: str) -> bool:
    """Whether ``host`` is ``localhost`` or a loopback IP literal (``127.0.0.0/8``, ``::1``)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _ReportHandler(BaseHTTPRequestHandler):
    server: ReportServer

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _answer(self, *, with_body: bool) -> None:
        path = self.path.split("?", 1)[0].split("#", 1)[0]
        if path not in SERVED_PATHS:
            self.send_error(HTTPStatus.NOT_FOUND, "only the report page is served here")
            return
        try:
            body = self.server.report.read_bytes()
        except OSError:
            self.send_error(HTTPStatus.NOT_FOUND, f"{REPORT_NAME} is gone from the run directory")
            return
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.end_headers()
        if with_body:
            self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("view: " + format, *args)


class ReportServer(ThreadingHTTPServer):
    """An HTTP server for one ``report.html``; :attr:`url` is where to open it."""

    daemon_threads = True

    def __init__(self, report: Path, host: str, port: int) -> None:
        self.report = report
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host.strip("[]"), port), _ReportHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        shown = f"[{host}]" if ":" in str(host) else str(host)
        return f"http://{shown}:{port}/"


def make_report_server(
    run_dir: Path, host: str = "127.0.0.1", port: int = 8765, *, allow_remote: bool = False
) -> ReportServer:
    """A bound (not yet serving) server for ``run_dir/report.html``.

    :class:`ConfigurationError` for a directory without ``report.html`` (the fix: ``mimesis-gym
    report RUN_DIR``), a non-loopback ``host`` without ``allow_remote``, or a port that cannot be bound.
    """
    report = run_dir / REPORT_NAME
    if not report.is_file():
        raise ConfigurationError(f"{report} does not exist; write it with `mimesis-gym report {run_dir}`")
    if not is_loopback_host(host) and not allow_remote:
        raise ConfigurationError(
            f"--host {host} is not a loopback address: anyone who reaches it could read the run; use an SSH "
            "tunnel to 127.0.0.1, or pass --allow-remote to serve it there anyway"
        )
    try:
        return ReportServer(report, host, port)
    except OSError as error:
        reason = error.strerror or error
        raise ConfigurationError(f"cannot listen on {host}:{port}: {reason} (try another --port)") from None
