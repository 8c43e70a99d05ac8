"""A headless Chromium driven over the DevTools protocol through a pipe (no extra package, no port).

Chromium's ``--remote-debugging-pipe`` reads protocol messages on file descriptor 3 and writes its
replies and events on descriptor 4, each message a JSON object ended by a NUL byte. :class:`Chromium`
starts the browser with those two pipes, :meth:`Chromium.page` opens a tab, and :class:`Page` loads
URLs, evaluates script, takes screenshots and keeps every console message and uncaught exception
(``Runtime`` and ``Log`` domains), so a test can assert that a page logged no error.

The browser is the system's (Debian's ``chromium``): :func:`find_chromium` looks for it and returns
``None`` when it is absent, for a skip with a reason. Nothing is downloaded.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["Chromium", "ChromiumError", "Page", "find_chromium"]

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class ChromiumError(RuntimeError):
    """The browser answered a command with an error, died, or did not answer in time."""


def find_chromium() -> str | None:
    """``$MIMESIS_CHROMIUM``, else the first of :data:`CANDIDATES` on ``PATH``; ``None`` when none is there."""
    explicit = os.environ.get("MIMESIS_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).is_file() else None
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


class Chromium:
    """One headless browser process (context manager); :meth:`close` ends it and removes its profile."""

    def __init__(self, executable: str, *, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.profile = tempfile.mkdtemp(prefix="mimesis-chromium-")
        to_browser_read, self._to_browser = os.pipe()
        self._from_browser, from_browser_write = os.pipe()

        def wire_pipes() -> None:  # in the child, before exec: descriptors 3 and 4 as the protocol wants
            read_copy = fcntl.fcntl(to_browser_read, fcntl.F_DUPFD, 10)
            write_copy = fcntl.fcntl(from_browser_write, fcntl.F_DUPFD, 10)
            os.dup2(read_copy, 3)
            os.dup2(write_copy, 4)
            os.close(read_copy)
            os.close(write_copy)

        self.process = subprocess.Popen(
            [
                executable, "--headless", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--disable-sync",
                "--disable-background-networking", "--disable-component-update", "--hide-scrollbars",
                f"--user-data-dir={self.profile}", "about:blank",
            ],
            preexec_fn=wire_pipes,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        os.close(to_browser_read)
        os.close(from_browser_write)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Send one command and wait for its result; events that arrive meanwhile go to :attr:`events`."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode("utf-8") + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise ChromiumError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, session: str | None = None, timeout: float | None = None) -> dict[str, Any]:
        """The first not yet consumed event ``method`` (of ``session``), waiting for it if needed."""
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            for position, event in enumerate(self.events):
                if event.get("method") == method and (session is None or event.get("sessionId") == session):
                    return self.events.pop(position)
            self.events.append(self._read(deadline))

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ChromiumError("no answer from the browser in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise ChromiumError(f"the browser closed its pipe (exit code {self.process.poll()})")
                self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def page(self, width: int = 1400, height: int = 1000) -> Page:
        """A new tab with the Page, Runtime and Log domains on, ``width`` × ``height`` CSS pixels."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=session)
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        return Page(self, session, target)

    def close(self) -> None:
        try:
            if self.process.poll() is None:
                with contextlib.suppress(ChromiumError, OSError):
                    self.send("Browser.close")
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait()
        finally:
            for fd in (self._to_browser, self._from_browser):
                with contextlib.suppress(OSError):
                    os.close(fd)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Page:
    """One tab: load, evaluate, screenshot, and the console errors it logged."""

    def __init__(self, browser: Chromium, session: str, target: str) -> None:
        self.browser, self.session, self.target = browser, session, target

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, session=self.session)

    def load(self, url: str) -> None:
        """Navigate to ``url`` and wait for its load event."""
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise ChromiumError(f"cannot load {url}: {result['errorText']}")
        self.browser.wait_for("Page.loadEventFired", self.session)

    def evaluate(self, expression: str) -> Any:
        """The value of a script expression (awaited when it is a promise); a thrown error raises."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in result:
            raise ChromiumError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """A PNG of the whole page (beyond the viewport) at ``path``."""
        data = self.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})["data"]
        path.write_bytes(base64.b64decode(data))
        return path

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and error log entries (CSP violations, failed loads) so far."""
        self.send("Runtime.evaluate", {"expression": "0"})  # a round trip: pending events arrive first
        found = []
        for event in self.browser.events:
            if event.get("sessionId") != self.session:
                continue
            params = event.get("params", {})
            if event.get("method") == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append("console: " + " ".join(str(a.get("value", a.get("description"))) for a in params["args"]))
            elif event.get("method") == "Runtime.exceptionThrown":
                details = params.get("exceptionDetails", {})
                found.append("exception: " + str(details.get("exception", {}).get("description", details.get("text"))))
            elif event.get("method") == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append("log: " + str(params["entry"].get("text")))
        return found
