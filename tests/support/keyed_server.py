"""A stand-in for vLLM's OpenAI server *process*, for the serve-user key tests (run as a script).

``python keyed_server.py PORT SERVED_NAME``: like vLLM, it reads its API key from ``$VLLM_API_KEY``,
answers ``/health`` without it and guards ``/v1/*`` with it (401 without ``Authorization: Bearer
<key>``). Like a careless server it prints its configuration, key included, to stdout, so the tests
can check that :class:`~mimesis_gym.users.serve.VLLMServer` redacts what it relays.
"""

from __future__ import annotations

import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def main() -> None:
    port, served = int(sys.argv[1]), sys.argv[2]
    key = os.environ.get("VLLM_API_KEY")
    print(f"api key from the environment: {'yes' if key else 'no'}", flush=True)
    print(f"config: served={served} api_key={key}", flush=True)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {})
            elif key and self.headers.get("Authorization") != f"Bearer {key}":
                self._send(401, {"error": {"message": "unauthorized"}})
            else:
                self._send(200, {"data": [{"id": served}]})

        def _send(self, status: int, data: Any) -> None:
            payload = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__":
    main()
