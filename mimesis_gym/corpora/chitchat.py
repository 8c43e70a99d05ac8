"""BYU PCCL's chitchat (MIT): open-domain chat between two people who were shown a conversation starter.

The file is a JSON object: conversation id → ``{"messages": [[message, ...], ...], "prompt"?, ...}``,
each inner list the consecutive messages of one speaker (``{"text", "sender", "timestamp"}``).
The first to write something (not an empty message) is the "user", the other the "assistant"
(both are people). The goal describes the ``prompt`` both were shown (``goal_kind="description"``);
without one it is the first message. A conversation where only one person wrote something is
``"no reply"`` (645 of the shipped 1,500: 644 with one sender, and one whose second sender sent only
an empty message); one with more than two senders is ``"more than two speakers"``.
"""

from __future__ import annotations

from pathlib import Path

from mimesis_gym.corpora.assemble import Assembler, CorpusLoad, Message, read_json, text_or_none

__all__ = ["SOURCE", "load"]

SOURCE = "chitchat"


def load(path: Path) -> CorpusLoad:
    """The conversations of ``chitchat_subset.json`` (or the full ``chitchat.json``) at ``path``."""
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object of chitchat conversations by id, got {type(data).__name__}")
    assembler = Assembler(SOURCE, path)
    for conv_id, record in data.items():
        sent = _sent(record)
        if sent is None:
            assembler.drop("malformed record", f"conversation {conv_id}")
            continue
        senders = list(dict.fromkeys(sender for sender, _ in sent))
        if len(senders) > 2:
            assembler.drop("more than two speakers", f"conversation {conv_id}")
            continue
        user = next((sender for sender, text in sent if isinstance(text, str) and text.strip()), None)
        messages = [Message("user" if sender == user else "assistant", text) for sender, text in sent]
        assembler.add(conv_id, messages, _goal(text_or_none(record.get("prompt"))))
    return assembler.result()


def _sent(record: object) -> list[tuple[object, object]] | None:
    """``(sender, text)`` of every message in order, or ``None`` when the record is not of chitchat's shape."""
    if not isinstance(record, dict) or not isinstance(record.get("messages"), list):
        return None
    sent = []
    for group in record["messages"]:
        if not isinstance(group, list) or not all(
            isinstance(item, dict) and isinstance(item.get("sender"), str) for item in group
        ):
            return None
        sent += [(item["sender"], item.get("text")) for item in group]
    return sent


def _goal(prompt: str | None) -> str | None:
    if prompt is None or not prompt.strip():
        return None
    return f'The user chats with a stranger; both were shown the conversation starter "{prompt.strip()}".'
