"""The agent alias registry (docs/evaluation.md, "Agents"): ``tiny``, ``hf:…``, ``scripted:…``, ``oracle``.

An agent of another package joins as ``module:Class`` (any ``module:callable`` returning an agent), or
from an installed plug-in package through the entry-point group ``mimesis_gym.agents`` (name: the
alias, value: the class or factory), loaded at the first lookup or listing. Either is called with the
options of :func:`make_agent` its signature takes (``max_tokens``, ``temperature``, ``on_no_tool_call``,
``constrained``).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from typing import Any

from mimesis_gym.agents.baseline import BaselineAgent
from mimesis_gym.agents.http import ToolCallingAgent
from mimesis_gym.agents.local import LocalAgent
from mimesis_gym.agents.scripted import NoopAgent, OracleTextAgent, RandomAgent
from mimesis_gym.core.errors import ConfigurationError
from mimesis_gym.core.http import EndpointConfig, EndpointHints, check_base_url
from mimesis_gym.core.imports import import_object
from mimesis_gym.core.plugins import EntryPointGroup
from mimesis_gym.users.builtin import BUILTIN_ALIASES, alias_env_key
from mimesis_gym.users.registry import check_local_model_path, endpoint_hints, resolve_user

__all__ = [
    "BUILTIN_AGENT_DESCRIPTIONS",
    "ENTRY_POINT_GROUP",
    "KNOWN_AGENTS",
    "RELEASED_AGENTS",
    "make_agent",
    "plugin_agents",
    "released_agent_endpoint",
]

ENTRY_POINT_GROUP = "mimesis_gym.agents"
GRAMMAR_PREFIXES = ("hf", "openai", "scripted", "vllm")
"""Alias grammars whose ``prefix:rest`` is never read as ``module:Class``."""

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
_plugin_factories: dict[str, Callable[..., Any]] = {}


def _register_plugin(name: str, value: Any) -> None:
    """Keep the factory an entry point of ``mimesis_gym.agents`` names under its (lower-case) alias."""
    alias = name.strip().lower()
    if not callable(value):
        raise TypeError(f"an agent plug-in names a class or factory returning an agent; got {value!r}")
    if ":" in alias or alias in KNOWN_AGENTS or alias in BUILTIN_ALIASES or alias in _plugin_factories:
        raise ValueError(f"agent alias {alias!r} is taken or has a ':'; name the entry point otherwise")
    _plugin_factories[alias] = value


_PLUGINS = EntryPointGroup(ENTRY_POINT_GROUP, _register_plugin)


def plugin_agents() -> dict[str, str]:
    """Alias → first docstring line of the agents of installed plug-in packages (they load here, once)."""
    _PLUGINS.load()
    return {alias: (inspect.getdoc(factory) or "").partition("\n")[0] for alias, factory in _plugin_factories.items()}


def _import_path(key: str) -> bool:
    """Whether ``key`` reads ``package.module:Name`` (and is no ``hf:``/``openai:``/… grammar)."""
    module, colon, name = key.partition(":")
    parts = [*module.split("."), *name.split(".")]
    return bool(colon) and module.lower() not in GRAMMAR_PREFIXES and all(part.isidentifier() for part in parts)


def _plugin_agent(alias: str, options: dict[str, Any]) -> Any:
    """The agent of a plug-in alias or a ``module:Class`` path, built with the options it takes; ``None`` if neither."""
    _PLUGINS.load()
    factory = _plugin_factories.get(alias.strip().lower())
    if factory is None and _import_path(alias.strip()):
        try:
            factory = import_object(alias.strip(), setting="agent")
        except (ImportError, AttributeError) as error:
            raise ConfigurationError(f"agent {alias!r}: cannot import it ({error})") from None
    if factory is None:
        return None
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        parameters = ()
    takes_all = any(parameter.kind is inspect.Parameter.VAR_KEYWORD for parameter in parameters)
    names = {parameter.name for parameter in parameters}
    return factory(**{key: value for key, value in options.items() if takes_all or key in names})


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
    agent = _plugin_agent(key, options)
    if agent is not None:
        return agent
    plugins = "".join(f", {name}" for name in _plugin_factories)
    raise ConfigurationError(
        f"unknown agent alias {alias!r}; known: {', '.join(KNOWN_AGENTS)}{plugins}, any HTTP user alias "
        f"({', '.join(BUILTIN_ALIASES)}), or an agent class as 'module:Class'"
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
