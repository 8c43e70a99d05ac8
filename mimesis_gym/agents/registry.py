"""The agent alias registry (docs/evaluation.md, "Agents"): ``tiny``, ``hf:…``, ``scripted:…``, ``oracle``."""

from __future__ import annotations

import os
from typing import Any

from mimesis_gym.agents.baseline import BaselineAgent
from mimesis_gym.agents.http import ToolCallingAgent
from mimesis_gym.agents.local import LocalAgent
from mimesis_gym.agents.scripted import NoopAgent, OracleTextAgent, RandomAgent
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.http import EndpointConfig, EndpointHints, check_base_url
from mimesis_gym.users.builtin import BUILTIN_ALIASES, alias_env_key
from mimesis_gym.users.registry import check_local_model_path, endpoint_hints, resolve_user

__all__ = ["BUILTIN_AGENT_DESCRIPTIONS", "KNOWN_AGENTS", "RELEASED_AGENTS", "make_agent", "released_agent_endpoint"]

RELEASED_AGENTS: dict[str, tuple[str, str]] = {
    "base-agent": ("phanviethoang1512/Qwen3-8B-Base-Agent", "Base"),
    "userrl-agent": ("phanviethoang1512/Qwen3-8B-UserRL-Agent", "GRPO w. GPT-5.5 (UserRL)"),
    "userrl-plus-agent": ("phanviethoang1512/Qwen3-8B-UserRL-Plus-Agent", "GRPO w. MIMESIS-9B (UserRL+)"),
    "infopo-agent": ("phanviethoang1512/Qwen3-8B-InfoPO-Agent", "InfoPO"),
    "csd-agent": ("phanviethoang1512/Qwen3-8B-CSD-Agent", "CSD"),
}
"""Released agents: hub id and table label; served by vLLM at
``$MIMESIS_AGENT_<KEY>_BASE_URL`` (default ``http://127.0.0.1:8100/v1``), served name = alias."""

BUILTIN_AGENT_DESCRIPTIONS: dict[str, str] = {
    "tiny": "the embedded SmolLM2-135M, in process",
    "hf:<path>": "a local transformers model",
    "openai:<model>[@<base_url>]": "an OpenAI-compatible endpoint, tool calls",
    "scripted:noop": "always the same harmless move",
    "scripted:baseline": "one fair scripted strategy per env",
    "scripted:random[:<delay>]": "a random allowed move (the floor)",
    "oracle": "the env's privileged oracle (the ceiling)",
}
"""What ``mimesis-gym list agents`` says of the aliases that are not released agents."""

KNOWN_AGENTS = (
    "tiny",
    "hf:<path>",
    "openai:<model>[@<base_url>]",
    "scripted:noop",
    "scripted:baseline",
    "scripted:random[:<delay>]",
    "oracle",
    *RELEASED_AGENTS,
)


def make_agent(
    alias: str,
    *,
    max_tokens: int = 2048,
    temperature: float = 0.0,
    on_no_tool_call: str = "grammar",
    constrained: bool = False,
) -> Any:
    """Build the agent for ``alias``; ``ConfigurationError`` (a ``ValueError``) listing the known ones otherwise.

    ``constrained``: local agents decode under the action grammar, HTTP agents ask for structured outputs
    (docs/evaluation.md, "Constrained actions"); scripted agents and the oracle ignore it.
    """
    key = alias.strip()
    lowered = key.lower()
    if lowered == "tiny":
        return LocalAgent(None, name="tiny", max_tokens=max_tokens, temperature=temperature, constrained=constrained)
    if lowered.startswith("hf:") and len(key) > 3:
        check_local_model_path(key[3:], key)
        return LocalAgent(key[3:], name=key, max_tokens=max_tokens, temperature=temperature, constrained=constrained)
    if lowered == "scripted:noop":
        return NoopAgent()
    if lowered == "scripted:baseline":
        return BaselineAgent()
    if lowered == "scripted:random" or lowered.startswith("scripted:random:"):
        delay = lowered.removeprefix("scripted:random").lstrip(":")
        try:
            return RandomAgent(float(delay) if delay else 0.0)
        except ValueError:
            raise ValueError(f"bad delay in agent alias {alias!r}; use scripted:random:<seconds>") from None
    if lowered == "oracle":
        return OracleTextAgent()
    options: dict[str, Any] = {
        "max_tokens": max_tokens,
        "temperature": temperature,
        "on_no_tool_call": on_no_tool_call,
        "constrained": constrained,
    }
    if lowered in RELEASED_AGENTS:
        endpoint, hints = released_agent_endpoint(lowered)
        return ToolCallingAgent(endpoint, name=lowered, hints=hints, **options)
    # openai:<model>[@<url>] and every HTTP user alias (mimesis-9b, gpt-5.5, …) also act as agents: a
    # customer policy in ABCDBehavior, or a user model tried as an agent elsewhere.
    if lowered.startswith("openai:") or lowered in BUILTIN_ALIASES:
        spec = resolve_user(key)
        if spec.endpoint is not None:
            return ToolCallingAgent(spec.endpoint, name=spec.alias, hints=endpoint_hints(spec), **options)
    raise ConfigurationError(
        f"unknown agent alias {alias!r}; known: {', '.join(KNOWN_AGENTS)}, or any HTTP user alias "
        f"({', '.join(BUILTIN_ALIASES)})"
    )


def released_agent_endpoint(alias: str) -> tuple[EndpointConfig, EndpointHints]:
    """The endpoint of a released agent (``$MIMESIS_AGENT_<KEY>_BASE_URL``, default port 8100) and its hints."""
    key = alias_env_key(alias)
    variable = f"MIMESIS_AGENT_{key}_BASE_URL"
    try:
        base_url = check_base_url(os.environ.get(variable, "http://127.0.0.1:8100/v1"))
    except ValueError as error:
        raise ConfigurationError(f"{variable}: {error}") from None
    endpoint = EndpointConfig(base_url=base_url, model=alias, api_key_env=[f"MIMESIS_AGENT_{key}_API_KEY"])
    hub = RELEASED_AGENTS[alias][0]
    hints = EndpointHints(
        connect=f"serve {hub} with vLLM's OpenAI server as {alias!r} (tool calls on, parser hermes) and set "
        f"{variable} to its /v1 URL",
        auth=f"set MIMESIS_AGENT_{key}_API_KEY to the server's key",
        model=f"serve it under the name {alias!r} (--served-model-name {alias})",
    )
    return endpoint, hints
