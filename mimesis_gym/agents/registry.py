"""The agent alias registry (evaluation.md §3.6): ``tiny``, ``hf:…``, ``scripted:…``, ``oracle``."""

from __future__ import annotations

import os
from typing import Any

from mimesis_gym.agents.http import ToolCallingAgent
from mimesis_gym.agents.local import LocalAgent
from mimesis_gym.agents.scripted import NoopAgent, OracleTextAgent, RandomAgent
from mimesis_gym.core.http import EndpointConfig
from mimesis_gym.users.builtin import alias_env_key
from mimesis_gym.users.registry import resolve_user

__all__ = ["KNOWN_AGENTS", "RELEASED_AGENTS", "make_agent"]

RELEASED_AGENTS: dict[str, tuple[str, str]] = {
    "base-agent": ("phanviethoang1512/Qwen3-8B-Base-Agent", "Base"),
    "userrl-agent": ("phanviethoang1512/Qwen3-8B-UserRL-Agent", "GRPO w. GPT-5.5 (UserRL)"),
    "userrl-plus-agent": ("phanviethoang1512/Qwen3-8B-UserRL-Plus-Agent", "GRPO w. MIMESIS-9B (UserRL+)"),
    "infopo-agent": ("phanviethoang1512/Qwen3-8B-InfoPO-Agent", "InfoPO"),
    "csd-agent": ("phanviethoang1512/Qwen3-8B-CSD-Agent", "CSD"),
}
"""Released agents (evaluation.md §3.6): hub id and table label; served by vLLM at
``$MIMESIS_AGENT_<KEY>_BASE_URL`` (default ``http://127.0.0.1:8100/v1``), served name = alias."""

KNOWN_AGENTS = (
    "tiny",
    "hf:<path>",
    "openai:<model>[@<base_url>]",
    "scripted:noop",
    "scripted:random[:<delay>]",
    "oracle",
    *RELEASED_AGENTS,
)


def make_agent(
    alias: str, *, max_tokens: int = 2048, temperature: float = 0.0, on_no_tool_call: str = "grammar"
) -> Any:
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
    if lowered.startswith("openai:"):
        spec = resolve_user(key)  # the same grammar as openai: users
        assert spec.endpoint is not None
        return ToolCallingAgent(
            spec.endpoint,
            name=key,
            max_tokens=max_tokens,
            temperature=temperature,
            on_no_tool_call=on_no_tool_call,  # type: ignore[arg-type]
        )
    if lowered in RELEASED_AGENTS:
        variable = f"MIMESIS_AGENT_{alias_env_key(lowered)}_BASE_URL"
        endpoint = EndpointConfig(
            base_url=os.environ.get(variable, "http://127.0.0.1:8100/v1"),
            model=lowered,
            api_key_env=[f"MIMESIS_AGENT_{alias_env_key(lowered)}_API_KEY"],
        )
        return ToolCallingAgent(
            endpoint,
            name=lowered,
            max_tokens=max_tokens,
            temperature=temperature,
            on_no_tool_call=on_no_tool_call,  # type: ignore[arg-type]
        )
    raise ValueError(f"unknown agent alias {alias!r}; known: {', '.join(KNOWN_AGENTS)}")
