"""A person at the terminal answers the role calls (docs/users.md, "A human"; alias ``human``).

Per role call it prints the role and turn, the system message the first time in an episode (and
again on ``/show``) and the latest ``user`` message, then reads the answer. A line ending in ``\\``
continues on the next line; ``/quit`` or the end of input fails the call with ``human_quit`` (the
env's fallback applies). With ``json_keys`` the person is asked for each key in turn and the
answers are assembled into a JSON object. One prompt at a time (a lock); ``thought`` is ``None``.
"""

from __future__ import annotations

import asyncio
import builtins
import json
from collections.abc import Callable, Sequence
from typing import Any

from mimesis_gym.core.chat import ChatFailure, ChatReply, Usage, current_call_context

__all__ = ["HumanChatModel"]


class HumanChatModel:
    """The ``human`` user: the terminal is the model."""

    is_human = True

    def __init__(
        self,
        *,
        name: str = "human",
        input_fn: Callable[[str], str] | None = None,
        print_fn: Callable[[str], None] | None = None,
    ) -> None:
        self.name = name
        self._input = input_fn
        self._print = print_fn
        self._lock: asyncio.Lock | None = None
        self._seen_episodes: set[str | None] = set()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_lock"] = None
        return state

    def _say(self, text: str) -> None:
        (self._print or print)(text)

    def _read_answer(self, prompt: str) -> str | None:
        """One answer (continuation lines joined); ``None`` for /quit or end of input."""
        reader = self._input or builtins.input
        lines: list[str] = []
        while True:
            try:
                line = reader(prompt if not lines else "... ")
            except EOFError:
                return None
            if not lines and line.strip() == "/quit":
                return None
            if line.endswith("\\"):
                lines.append(line[:-1])
                continue
            lines.append(line)
            return "\n".join(lines)

    async def chat(
        self,
        messages: list[dict[str, Any]],
        *,
        max_tokens: int,
        temperature: float,
        seed: int | None,
        json_keys: Sequence[str] | None = None,
    ) -> ChatReply:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            return await asyncio.to_thread(self._converse, messages, json_keys)

    def _converse(self, messages: list[dict[str, Any]], json_keys: Sequence[str] | None) -> ChatReply:
        context = current_call_context()
        system = next((m["content"] for m in messages if m.get("role") == "system"), "")
        last_user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        self._say(f"\n=== you are playing: {context.role or 'user'} (turn {context.turn}) ===")
        if context.episode_id not in self._seen_episodes:
            self._seen_episodes.add(context.episode_id)
            self._say(system)
        self._say(f"--- they said ---\n{last_user}")
        answers: dict[str, str] = {}
        for key in list(json_keys or [None]):  # type: ignore[list-item]
            while True:
                answer = self._read_answer(f"{key}> " if key else "> ")
                if answer is None:
                    return ChatReply(failure=ChatFailure("human_quit", "the person quit", attempts=1))
                if answer.strip() == "/show":
                    self._say(system)
                    continue
                break
            if key is None:
                return ChatReply(text=answer.strip(), usage=Usage(attempts=1))
            answers[key] = answer.strip()
        return ChatReply(text=json.dumps(answers, ensure_ascii=False), usage=Usage(attempts=1))
