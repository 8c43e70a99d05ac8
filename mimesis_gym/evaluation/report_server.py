"""``mimesis-gym view RUN_DIR``: serve a run's ``report.html`` over HTTP (docs/evaluation.md, "The report page").

For a run on a remote machine: ``view`` listens on 127.0.0.1 and the reader opens an SSH tunnel
(``ssh -L 8765:127.0.0.1:8765 host``). Only the page is served — ``/`` and ``/report.html``,
read afresh at each request so that a rewritten report shows on reload; every other path is 404,
so the records and ``run.json`` beside it are not exposed. A host that is not a loopback address
is refused unless ``allow_remote`` is set (anyone who can reach the port can then read the run).

Requests are answered only when their ``Host`` header names this server (:func:`is_served_host`):
a loopback name (``localhost``, ``127.0.0.1``, ``[::1]``, any port), or the ``--host`` it was bound
to (on a wildcard address, any IP literal). Any other name gets 403: a web page whose domain was
re-pointed at 127.0.0.1 (DNS rebinding) sends its own domain as ``Host`` and cannot read the run.
A client that leaves mid-download is logged at debug level only.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
import sys
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.evaluation.html_report import REPORT_NAME

__all__ = ["ReportServer", "authority_host", "is_loopback_host", "is_served_host", "make_report_server"]

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


_AUTHORITY = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[^:\[\]@/?#\\\s]+)(?::\d{0,5})?")


def authority_host(authority: str) -> str | None:
    """The host of ``host[:port]`` (a ``Host`` header, an origin's authority), lower-cased and an
    IPv6 literal without its brackets; ``None`` for anything else (userinfo, a path, a bare IPv6)."""
    match = _AUTHORITY.fullmatch(authority.strip())
    return match.group(1).strip("[]").lower() if match else None


def _ip(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def is_served_host(name: str, bound: str, *, ip_on_wildcard: bool) -> bool:
    """Whether host ``name`` (as :func:`authority_host` gives it) names a server bound to ``bound``.

    A loopback name always does, and so does ``bound`` itself (compared as IP addresses when both
    are literals). A wildcard ``bound`` (``0.0.0.0``, ``::``) has no one name: with ``ip_on_wildcard``
    any IP literal counts (a DNS-rebinding page sends its own domain name, never an address).
    """
    if is_loopback_host(name):
        return True
    address, bound_address = _ip(name), _ip(bound)
    if bound_address is not None and bound_address.is_unspecified:
        return ip_on_wildcard and address is not None
    if address is not None and bound_address is not None:
        return address == bound_address
    return name == bound.strip("[]").lower()


class _ReportHandler(BaseHTTPRequestHandler):
    server: ReportServer

    def do_GET(self) -> None:
        self._answer(with_body=True)

    def do_HEAD(self) -> None:
        self._answer(with_body=False)

    def _answer(self, *, with_body: bool) -> None:
        if not self.server.host_allowed(self.headers.get("Host")):
            self.send_error(HTTPStatus.FORBIDDEN, f"unknown Host: open the page at {self.server.url}")
            return
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
        self.bound_host = host
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        super().__init__((host.strip("[]"), port), _ReportHandler)

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request's ``Host`` header names this server (none at all: not a browser, allowed)."""
        if header is None:
            return True
        name = authority_host(header)
        return name is not None and is_served_host(name, self.bound_host, ip_on_wildcard=True)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that left mid-answer (closed tab, dropped tunnel) is a debug line, not a traceback."""
        if isinstance(sys.exc_info()[1], ConnectionError):
            logger.debug("view: %s disconnected before the answer was sent", client_address[0])
            return
        super().handle_error(request, client_address)

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
