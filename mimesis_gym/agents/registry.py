"""The agent alias registry (evaluation.md §3.6): ``tiny``, ``hf:…``, ``scripted:…``, ``oracle``."""

from __future__ import annotations

from typing import Any

from mimesis_gym.agents.local import LocalAgent
from mimesis_gym.agents.scripted import NoopAgent, OracleTextAgent, RandomAgent

__all__ = ["KNOWN_AGENTS", "make_agent"]

KNOWN_AGENTS = ("tiny", "hf:<path>", "scripted:noop", "scripted:random[:<delay>]", "oracle")


def make_agent(alias: str, *, max_tokens: int = 2048, temperature: float = 0.0) -> Any:
    """Build the agent for ``alias``; ``ValueError`` listing the known aliases otherwise."""
    key = alias.strip()
    lowered = key.lower()
    if lowered == "tiny":
        return LocalAgent(None, name="tiny", max_tokens=max_tokens, temperature=temperature)
    if lowered.startswith("hf:") and len(key) > 3:
        return LocalAgent(key[3:], name=key, max_tokens=max_tokens, temperature=temperature)
    if lowered == "scripted:noop":
        return NoopAgent()
    if lowered == "scripted:random" or lowered.startswith("scripted:random:"):
        delay = lowered.removeprefix("scripted:random").lstrip(":")
        try:
            return RandomAgent(float(delay) if delay else 0.0)
        except ValueError:
            raise ValueError(f"bad delay in agent alias {alias!r}; use scripted:random:<seconds>") from None
    if lowered == "oracle":
        return OracleTextAgent()
    raise ValueError(f"unknown agent alias {alias!r}; known: {', '.join(KNOWN_AGENTS)}")
