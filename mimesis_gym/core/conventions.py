"""Conventions shared by every chat model: think handling and the role frame (users.md §2.1-2.2).

These functions are pure. The retry loop and the HTTP client that apply them to every backend
build on this module.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = [
    "DEFAULT_OPENER",
    "THINK_TAG_FAMILIES",
    "has_think_tag",
    "reinline_reasoning",
    "role_messages",
    "split_thought",
]

THINK_TAG_FAMILIES: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),
    ("<seed:think>", "</seed:think>"),
)
"""Tag families stripped from every reply, in this order (exact lower-case tags)."""

DEFAULT_OPENER = "Hello."
"""Inserted as the first ``user`` message when a role's own chat would open with ``assistant``."""

_BLOCK_PATTERNS = tuple(
    re.compile(re.escape(opener) + r"(.*?)" + re.escape(closer), re.DOTALL) for opener, closer in THINK_TAG_FAMILIES
)


def has_think_tag(text: str) -> bool:
    """True when ``text`` contains any opener or closer of a think tag family."""
    return any(opener in text or closer in text for opener, closer in THINK_TAG_FAMILIES)


def split_thought(raw: str) -> tuple[str, str | None]:
    """Split a raw completion into ``(utterance, thought)`` (users.md §2.2, step 2).

    For each tag family in order: (a) remove every complete ``opener…closer`` block (shortest
    match); (b) if a closer remains (the template pre-filled the opener), remove everything from
    the start through that first closer; (c) if an opener remains (the token cap hit mid-thought),
    remove it and everything after it. The utterance is what is left, stripped. The thought is the
    removed texts without tags, in textual order, trimmed and joined by a blank line, or ``None``
    when no tag occurred or all of it is whitespace.
    """
    pieces: list[tuple[int, str]] = []  # (position in ``raw``, removed text without tags)
    text = raw
    origin = list(range(len(raw)))  # origin[i] = position in ``raw`` of text[i]

    def cut(start: int, end: int, inner_start: int, inner_end: int) -> None:
        nonlocal text, origin
        if inner_end > inner_start:
            pieces.append((origin[inner_start], text[inner_start:inner_end]))
        text = text[:start] + text[end:]
        origin = origin[:start] + origin[end:]

    for (opener, closer), block in zip(THINK_TAG_FAMILIES, _BLOCK_PATTERNS, strict=True):
        # (a) complete blocks, removed right to left so earlier offsets stay valid
        for match in reversed(list(block.finditer(text))):
            cut(match.start(), match.end(), match.start(1), match.end(1))
        # (b) a dangling closer: the opener was pre-filled by the chat template
        closer_at = text.find(closer)
        if closer_at != -1:
            cut(0, closer_at + len(closer), 0, closer_at)
        # (c) a dangling opener: the token cap hit mid-thought
        opener_at = text.find(opener)
        if opener_at != -1:
            cut(opener_at, len(text), opener_at + len(opener), len(text))

    utterance = text.strip()
    thoughts = [_without_tags(piece).strip() for _, piece in sorted(pieces, key=lambda item: item[0])]
    thoughts = [piece for piece in thoughts if piece]
    return utterance, ("\n\n".join(thoughts) if thoughts else None)


def _without_tags(text: str) -> str:
    for opener, closer in THINK_TAG_FAMILIES:
        text = text.replace(opener, "").replace(closer, "")
    return text


def reinline_reasoning(content: str, reasoning: str | None) -> str:
    """Rebuild ``<think>reasoning</think>content`` from a separate reasoning field (users.md §2.2.1).

    Applied only when ``reasoning`` is non-empty and ``content`` holds no closing think tag, so both
    server set-ups (reasoning parser on or off) look the same afterwards.
    """
    if not reasoning or any(closer in content for _, closer in THINK_TAG_FAMILIES):
        return content
    return f"<think>{reasoning}</think>{content}"


def role_messages(
    system: str,
    turns: Iterable[tuple[str, str]],
    opener: str | None = DEFAULT_OPENER,
) -> list[dict[str, str]]:
    """Build a role's own chat: the simulated party is ``assistant``, its counterpart ``user``.

    ``turns`` are ``(speaker, text)`` pairs with speaker ``"self"`` (→ assistant) or ``"other"``
    (→ user). Consecutive messages of one role are merged with a blank line (several chat
    templates reject them). When the first non-system message would be ``assistant``, ``opener``
    is inserted as a ``user`` message (unless ``opener`` is ``None``).
    """
    messages: list[dict[str, str]] = [{"role": "system", "content": system}]
    for speaker, text in turns:
        if speaker not in ("self", "other"):
            raise ValueError(f"speaker must be 'self' or 'other', got {speaker!r}")
        role = "assistant" if speaker == "self" else "user"
        if len(messages) == 1 and role == "assistant" and opener is not None:
            messages.append({"role": "user", "content": opener})
        if messages[-1]["role"] == role:
            messages[-1] = {"role": role, "content": messages[-1]["content"] + "\n\n" + text}
        else:
            messages.append({"role": role, "content": text})
    return messages
