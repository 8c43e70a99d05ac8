"""Users over loopback for the replay protocol's tests: an OpenAI-compatible chat server on 127.0.0.1
that answers the replay env's user calls as a *copying* user (the human's own next turn, and the end
marker where the human ended) or as a *constant* user (the same text every time).

The copying user finds the conversation from what a replay user call carries: the system prompt (it
holds a described goal) and the last two messages of the history (the real turns before the asked
position), keyed exactly as :class:`~mimesis_gym.envs.replay.env.HumanReplayEnv` builds them.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from mimesis_gym.corpora import HumanConversation
from mimesis_gym.envs.replay.roles import END_MARKER, replay_messages, user_system_prompt
from tests.support.fault_server import completion


def _key(system: str, history: list[str]) -> str:
    return json.dumps([system, history[-2:]])


def _sent(conversation: HumanConversation, before: int) -> list[str]:
    """The history contents a replay user call carries before turn ``before`` (as the env sends them)."""
    pairs = [("self" if t.role == "user" else "other", t.text) for t in conversation.turns[:before]]
    messages = replay_messages(conversation.goal, conversation.goal_kind, conversation.source, pairs)
    return [message["content"] for message in messages[1:]]


class ReplayUserServer:
    """``mode="copy"`` answers with the human's turn (``END_MARKER`` where the human ended);
    ``mode="constant"`` answers ``constant`` every time. ``unknown`` counts calls it could not place."""

    def __init__(self, conversations: Iterable[HumanConversation], *, mode: str = "copy", constant: str = "ok") -> None:
        self.mode = mode
        self.constant = constant
        self.unknown = 0
        self.calls = 0
        self.table: dict[str, str] = {}
        for conversation in conversations:
            system = user_system_prompt(conversation.goal, conversation.goal_kind, conversation.source)
            for index, turn in enumerate(conversation.turns):
                if turn.role == "user":
                    self.table.setdefault(_key(system, _sent(conversation, index)), turn.text)
            ending = len(conversation.turns)
            self.table.setdefault(_key(system, _sent(conversation, ending)), END_MARKER)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send({"data": [{"id": "replay-user"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
                self._send(completion(server.answer(body.get("messages") or [])))

            def _send(self, data: Any) -> None:
                payload = json.dumps(data).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def answer(self, messages: list[dict[str, Any]]) -> str:
        self.calls += 1
        if self.mode == "constant":
            return self.constant
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        history = [m["content"] for m in messages if m.get("role") != "system"]
        found = self.table.get(_key(system, history))
        if found is None:
            self.unknown += 1
            return "(no such context)"
        return found

    def __enter__(self) -> ReplayUserServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._server.shutdown()
        self._server.server_close()
