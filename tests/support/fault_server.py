"""A fault-injecting chat-completions server on loopback (docs/users.md, "What every chat model guarantees").

A stdlib ``ThreadingHTTPServer`` in a thread. Each request takes the next mode from a queue set
by the test (or from the ``X-Fault`` header; with an empty queue, ``default_mode``, initially
``ok:hello``) and every request
(headers, body) is recorded for assertions. Modes:

``ok:<text>``, ``think:<reasoning>|<answer>`` (inline), ``prefilled:<reasoning>|<answer>`` (no
opener), ``reasoning_field`` (reasoning in its own field), ``think_only`` (unclosed, finish
``length``), ``empty``, ``null_content``, ``no_choices``, ``malformed``, ``html200``,
``status:<code>[:<message>]`` (``Retry-After: 1`` on 429 and 503), ``timeout`` (never answers, up
to 30 s), ``slow_body`` (chunked, one byte every 0.5 s), ``drop`` (closes mid-body), ``reset`` (reads
the request, then resets the connection: a TCP RST, "Connection reset by peer"),
``refusal_field``, ``refusal_text``, ``bad_json``, ``fenced_json``, ``sloppy_json``, ``tool:<arguments>``
(a tool call of ``interact_with_env``), ``echo``
(returns the request body as the content), ``raw:<json>`` (that JSON text as a 200 body, e.g. an
odd shape), ``auth_echo:<code>`` (status ``code`` with a JSON error body that reflects the request's
``Authorization`` header and its bare token, as a careless server does), ``auth_echo:text`` (the
same as a 200 text body) and ``auth_echo:content`` (a completion whose content is the bare token).
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def completion(content: Any, *, finish_reason: str = "stop", **message_fields: Any) -> dict[str, Any]:
    return {
        "id": "cmpl-test",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message_fields},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


class FaultServer:
    def __init__(self) -> None:
        self.modes: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.gets: list[dict[str, Any]] = []
        self.models: list[str] = ["fault-model"]
        """What ``GET /v1/models`` lists; ``models_status`` other than 200 answers that status instead."""
        self.models_status = 200
        self.default_mode = "ok:hello"
        """The mode of a completion request when the queue is empty."""
        self.models_reset = False
        """``True``: ``GET /v1/models`` resets the connection instead of answering."""
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                server.gets.append({"path": self.path, "headers": dict(self.headers)})
                if self.path.endswith("/health"):
                    self._send_json(200, {})
                elif server.models_reset:
                    server.reset(self)
                elif server.models_status != 200:
                    self._send_json(server.models_status, {"error": {"message": f"status {server.models_status}"}})
                else:
                    self._send_json(200, {"data": [{"id": name} for name in server.models]})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                server.requests.append({"headers": dict(self.headers), "body": body})
                mode = self.headers.get("X-Fault") or (server.modes.popleft() if server.modes else server.default_mode)
                server.handle(self, mode, body)

            def _send_json(self, status: int, data: Any, extra: dict[str, str] | None = None) -> None:
                payload = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                for key, value in (extra or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(payload)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def script(self, *modes: str) -> None:
        self.modes.extend(modes)

    def close(self) -> None:
        self._stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    # -- modes ---------------------------------------------------------------------------------

    @staticmethod
    def reset(handler: Any) -> None:
        """Close the handler's connection with a TCP RST (linger 0): the client reads "connection reset"."""
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
        handler.close_connection = True

    def handle(self, handler: Any, mode: str, body: dict[str, Any]) -> None:
        name, _, argument = mode.partition(":")
        send = handler._send_json
        if name == "ok":
            send(200, completion(argument))
        elif name == "think":
            reasoning, _, answer = argument.partition("|")
            send(200, completion(f"<think>{reasoning}</think>{answer}"))
        elif name == "prefilled":
            reasoning, _, answer = argument.partition("|")
            send(200, completion(f"{reasoning}</think>\n\n{answer}"))
        elif name == "reasoning_field":
            send(200, completion("The answer is here.", reasoning="private plan"))
        elif name == "think_only":
            send(200, completion("<think>still thinking about", finish_reason="length"))
        elif name == "empty":
            send(200, completion(""))
        elif name == "null_content":
            send(200, completion(None))
        elif name == "no_choices":
            send(200, {"id": "x", "choices": []})
        elif name == "malformed":
            self._send_bytes(handler, 200, b'{"choices": [{"message": {"content": "trunc', "application/json")
        elif name == "html200":
            self._send_bytes(handler, 200, b"<html><body>Bad gateway</body></html>", "text/html")
        elif name == "status":
            code_text, _, message = argument.partition(":")
            code = int(code_text)
            extra = {"Retry-After": "1"} if code in (429, 503) else None
            send(code, {"error": {"message": message or f"status {code}", "code": code}}, extra)
        elif name == "timeout":
            self._stop.wait(30)
        elif name == "slow_body":
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Transfer-Encoding", "chunked")
            handler.end_headers()
            payload = json.dumps(completion("slow")).encode()
            try:
                for byte in payload:
                    if self._stop.wait(0.5):
                        return
                    handler.wfile.write(b"1\r\n" + bytes([byte]) + b"\r\n")
                    handler.wfile.flush()
                handler.wfile.write(b"0\r\n\r\n")
            except OSError:
                return
        elif name == "drop":
            payload = json.dumps(completion("never complete")).encode()
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(payload)))
            handler.end_headers()
            handler.wfile.write(payload[:10])
            handler.wfile.flush()
            handler.close_connection = True
            handler.connection.shutdown(2)
        elif name == "reset":
            self.reset(handler)
        elif name == "refusal_field":
            send(200, completion(None, refusal="I can't help with that request."))
        elif name == "refusal_text":
            send(200, completion("I'm sorry, but I can't help with that."))
        elif name == "bad_json":
            send(200, completion("I think the answer is yes, definitely."))
        elif name == "fenced_json":
            send(200, completion('Here it is:\n```json\n{"answer": "yes", "reason": "fenced"}\n```'))
        elif name == "sloppy_json":
            send(200, completion('{“answer”: “yes”, "reason": "he said "hi" to me",}'))
        elif name == "tool":
            call = {
                "id": f"call_{len(self.requests)}",
                "type": "function",
                "function": {"name": "interact_with_env", "arguments": argument},
            }
            send(200, completion(None, finish_reason="tool_calls", tool_calls=[call]))
        elif name == "echo":
            send(200, completion(json.dumps(body)))
        elif name == "raw":
            self._send_bytes(handler, 200, argument.encode(), "application/json")
        elif name == "auth_echo":
            authorization = handler.headers.get("Authorization", "")
            token = authorization.split(" ", 1)[-1]
            reflected = f"internal error for Authorization: {authorization} (token {token})"
            if argument == "text":
                self._send_bytes(handler, 200, f"upstream says: {reflected}".encode(), "text/plain")
            elif argument == "content":
                send(200, completion(f"My key is {token}."))
            else:
                send(int(argument), {"error": {"message": reflected, "code": int(argument)}})
        else:
            raise ValueError(f"unknown fault mode {mode!r}")

    @staticmethod
    def _send_bytes(handler: Any, status: int, payload: bytes, content_type: str) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)


def wait_until(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False
